import { IncomingMessage } from 'node:http';
import type { RateLimitRequest } from './rate-limit-key';

/**
 * Gives a Fastify request the `user` a Nest middleware set: on Fastify a middleware receives the raw
 * Node request (`request.raw`), while guards, and so key and cost functions, receive the Fastify
 * request. With this they read `req.user` on Fastify as on Express. A `user` the request has already
 * (set by a guard, or decorated by a Fastify plugin) is left alone; Express requests have no `raw`.
 */
export function adoptRawUser(request: RateLimitRequest): void {
  // A Node request (Express) is the raw one itself: nothing to adopt. Told by `instanceof`, which
  // reads no property — Express swaps every request's prototype, so each property read misses V8's
  // caches (some 2,000 instructions each; see sinkOf in rate-limit-headers.ts).
  if (request instanceof IncomingMessage) return;
  if (request.user !== undefined && request.user !== null) return;
  const raw = (request as { raw?: unknown }).raw;
  if (typeof raw !== 'object' || raw === null) return;
  const user = (raw as { user?: unknown }).user;
  if (user !== undefined) request.user = user;
}
