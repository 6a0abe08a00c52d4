import { SetMetadata } from '@nestjs/common';
import { SKIP_RATE_LIMIT_METADATA, SLIDING_LIMIT_METADATA } from './rate-limit.constants';
import type { SlidingLimitOptions } from './sliding-limit.options';
import { requestModulePresenceCheck } from './module-presence';

/**
 * Limits a handler, or every handler of a controller, to `limit` requests per `windowMs` for each `key`.
 *
 * Stack several to enforce them all in one atomic call: a request rejected by any is counted by none.
 * Class and handler limits both apply; a handler limit with the same `name` replaces the class one.
 * Arguments are validated at bootstrap; the application must import `RateLimitModule`.
 *
 * @example
 * ```ts
 * @SlidingLimit({ name: 'login', limit: 5, windowMs: 60_000 })              // rl:login:{ip:10.0.0.1}
 * @SlidingLimit({ name: 'order', limit: 10, windowMs: 60_000, key: 'user' }) // rl:order:{user:10086}
 * ```
 */
export function SlidingLimit(options: SlidingLimitOptions): ClassDecorator & MethodDecorator {
  return (target: object, _propertyKey?: string | symbol, descriptor?: PropertyDescriptor): void => {
    const holder: object = descriptor ? (descriptor.value as object) : target;
    // Own metadata only: a subclass controller must not inherit and then re-add its parent's limits.
    const existing = (Reflect.getOwnMetadata(SLIDING_LIMIT_METADATA, holder) as unknown[] | undefined) ?? [];
    // Decorators apply bottom-up; prepend so the stored order is the order written in the source.
    // A copy, so later mutation of a shared options object cannot change a limit after validation.
    const copy = typeof options === 'object' && options !== null ? { ...options } : options;
    Reflect.defineMetadata(SLIDING_LIMIT_METADATA, [copy, ...existing], holder);
    // So that an application without RateLimitModule says so at start-up instead of limiting nothing.
    requestModulePresenceCheck(descriptor ? (target as { constructor: object }).constructor : target);
  };
}

/** Exempts a handler, or every handler of a controller, from all limits (health checks, webhooks). */
export const SkipRateLimit = (): ClassDecorator & MethodDecorator => SetMetadata(SKIP_RATE_LIMIT_METADATA, true);
