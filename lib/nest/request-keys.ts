import type { ExecutionContext } from '@nestjs/common';
import type { KeySource } from './key-template';
import type { CompiledLimit, HandlerPlan } from './limit-plan';
import type { RateLimitRequest } from './rate-limit-key';

/** The guard's hooks that make a request's keys (see `SlidingLimitGuard.getTracker`, `resolveKey`). */
export interface KeyHooks {
  tracker(request: RateLimitRequest, context: ExecutionContext): string | undefined;
  resolveKey(
    limit: CompiledLimit,
    request: RateLimitRequest,
    context: ExecutionContext,
    plan: HandlerPlan,
  ): string | Promise<string>;
}

/** What a request's key is read from: one shared source for template keys, one each for a key function. */
class RequestKeySource implements KeySource {
  constructor(
    private readonly hooks: KeyHooks,
    public request: RateLimitRequest,
    public context: ExecutionContext,
    public route: string,
  ) {}

  tracker(): string | undefined {
    return this.hooks.tracker(this.request, this.context);
  }

  /** The same source, now for another request. */
  pointAt(request: RateLimitRequest, context: ExecutionContext, route: string): this {
    this.request = request;
    this.context = context;
    this.route = route;
    return this;
  }
}

/** The keys of a guard's requests: each limit's identity, read by its compiled key. */
export class RequestKeys {
  /** The source of template keys, reused (see RequestKeySource); made at the first request. */
  private templateSource: RequestKeySource | undefined;

  constructor(private readonly hooks: KeyHooks) {}

  /** The identity `limit`'s key reads from the request, or undefined when there is none. */
  identityOf(
    limit: CompiledLimit,
    request: RateLimitRequest,
    context: ExecutionContext,
    plan: HandlerPlan,
  ): string | undefined | Promise<string | undefined> {
    if (limit.keyReadAtOnce && this.templateSource) {
      return limit.key(this.templateSource.pointAt(request, context, plan.route));
    }
    const source = new RequestKeySource(this.hooks, request, context, plan.route);
    if (limit.keyReadAtOnce) this.templateSource = source;
    return limit.key(source);
  }

  /** The keys of a request's limits from limit `from` on; a promise only when a key function gave one. */
  of(
    plan: HandlerPlan,
    request: RateLimitRequest,
    context: ExecutionContext,
    // Of its final length from the start: one allocation, where pushes would grow it.
    keys = new Array<string>(plan.limits.length),
    from = 0,
  ): string[] | Promise<string[]> {
    const { limits } = plan;
    for (let i = from; i < limits.length; i++) {
      const key = this.hooks.resolveKey(limits[i], request, context, plan);
      if (typeof key !== 'string') {
        return key.then((resolved) => {
          keys[i] = resolved;
          return this.of(plan, request, context, keys, i + 1);
        });
      }
      keys[i] = key;
    }
    return keys;
  }
}

/** The Redis key of one limit for an identity, without the limiter's prefix: `<name>:{<identity>}`. */
export function limitKey(limit: CompiledLimit, identity: string): string {
  return `${limit.name}:{${identity}}`;
}
