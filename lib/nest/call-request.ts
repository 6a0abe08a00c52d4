import type { ExecutionContext } from '@nestjs/common';
import type { RateLimitRequest } from './rate-limit-key';

/** The request of each call by its argument list: a global guard and a `@UseGuards` one share it. */
const requests = new WeakMap<object, RateLimitRequest>();

/** The request of a call of the transport `type`, built by `build` for the first guard that asks; else undefined. */
export function requestOfCall(
  context: ExecutionContext,
  type: string,
  build: (context: ExecutionContext) => RateLimitRequest,
): { request: RateLimitRequest } | undefined {
  if (context.getType() !== type) return undefined;
  const args = context.getArgs();
  let request = requests.get(args);
  if (request === undefined) requests.set(args, (request = build(context)));
  return { request };
}

/** True the first time it is asked about `item` with `seen`: for what is said once per handler. */
export function firstTime<T extends object>(seen: WeakSet<T>, item: T): boolean {
  if (seen.has(item)) return false;
  seen.add(item);
  return true;
}
