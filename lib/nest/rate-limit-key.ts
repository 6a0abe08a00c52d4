import type { ExecutionContext } from '@nestjs/common';

/**
 * The parts of a request the string key syntax reads. Every field is optional so that Express's
 * `Request` and Fastify's `FastifyRequest` both fit; annotate your key function with your own type.
 */
export interface RateLimitRequest {
  ip?: string;
  user?: unknown;
  params?: unknown;
  body?: unknown;
  query?: unknown;
  headers?: unknown;
}

/** What a key function returns; `undefined`, `null` or `''` mean "no key" (see the key syntax). */
export type RateLimitKeyValue = string | number | undefined | null;

/**
 * A key function: `(req, context) => string | Promise<string>`. Declared bivariantly so a function
 * annotated with Express's or Fastify's request type is accepted.
 */
export type RateLimitKeyFunction = {
  bivarianceHack(request: RateLimitRequest, context: ExecutionContext): RateLimitKeyValue | Promise<RateLimitKeyValue>;
}['bivarianceHack'];

/**
 * Who a limit counts: a key function or a key template such as `'ip'`, `'user'`, `'user:id'`,
 * `'param:phone'`, `'body:phone'`, `'query:q'`, `'header:x-api-key'`, `'route'`, `'global'`,
 * combined with `+` (`'route+ip'`). See docs/keys-and-headers.md ("Key syntax") for the full syntax.
 */
export type RateLimitKey = string | RateLimitKeyFunction;
