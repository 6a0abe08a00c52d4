import type { ExecutionContext } from '@nestjs/common';
import type { RateLimitRequest } from 'nestjs-sliding-limit';

/**
 * What the key templates, key functions and cost functions of a message or event handler see in
 * place of an HTTP request. There is no client address: the `ip` key part (the default key) never
 * resolves, and a part the message lacks has no address to fall back to. Give every limit a key from
 * the message — `key: 'body:tenantId'` or `key: (req: RpcRateLimitRequest) => ...` — or
 * `key: 'global'` for one bucket shared by all callers; a call whose key does not resolve is refused,
 * never counted in a bucket shared by everyone.
 */
export interface RpcRateLimitRequest extends RateLimitRequest {
  /** The message's payload, as `data`; here so `body:<path>` templates read it. */
  body: unknown;
  /** The message's payload. */
  data: unknown;
  /** The pattern the transport received (`TcpContext.getPattern()`, ...), or the handler's declared one. */
  pattern: unknown;
  /** The transport's context (`TcpContext`, `RedisContext`, `NatsContext`, ...). */
  context: unknown;
}

/** Where `@MessagePattern` / `@EventPattern` keep a handler's patterns. */
const PATTERN_METADATA = 'microservices:pattern';

export function buildRpcRateLimitRequest(context: ExecutionContext): RpcRateLimitRequest {
  const rpc = context.switchToRpc();
  const data = rpc.getData<unknown>();
  const transport = rpc.getContext<unknown>();
  return { body: data, data, pattern: patternOf(transport, context), context: transport };
}

function patternOf(transport: unknown, context: ExecutionContext): unknown {
  const getPattern = (transport as { getPattern?: unknown } | null | undefined)?.getPattern;
  if (typeof getPattern === 'function') return (getPattern as () => unknown).call(transport);
  const declared: unknown = Reflect.getMetadata(PATTERN_METADATA, context.getHandler());
  return Array.isArray(declared) ? declared[0] : declared;
}
