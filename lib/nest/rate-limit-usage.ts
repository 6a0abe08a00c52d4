import { Injectable, type ExecutionContext } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { SlidingWindowLimiter } from '../limiter/sliding-window.limiter';
import type { RateLimitDecision } from '../core/decisions';
import type { HandlerPlan } from './limit-plan';
import { toWholeSeconds } from './rate-limit-headers';
import type { RateLimitRequest } from './rate-limit-key';
import { SlidingLimitPlans } from './rate-limit-plans';
import { SlidingLimitGuard } from './sliding-limit.guard';

/** One named limit as {@link RateLimitUsage} reports it for a caller. */
export interface RateLimitUsageEntry {
  /** What the headers call it: the caller's tier under a policy (`free`), else the limit's name. */
  policy: string;
  /** The limit that applies to the caller: its tier's, or a per-key override's (0 when blocked). */
  limit: number;
  /** Requests (units of cost) the caller may still make in the window: `X-RateLimit-Remaining`. */
  remaining: number;
  /** Requests (units of cost) counted in the window. */
  used: number;
  /** Whole seconds until the window counts nothing again: `X-RateLimit-Reset`. */
  reset: number;
  /** Window length, ms. */
  windowMs: number;
  /** Set for a shadow limit (or a candidate), which never refuses. */
  shadow?: true;
  /** The per-key override that applies, if any. */
  override?: RateLimitDecision['override'];
  /** Set when Redis could not answer: the values are the failure policy's, not the caller's counts. */
  degraded?: RateLimitDecision['degraded'];
}

/** What {@link RateLimitUsage.of} answers: the caller's named limits, by `@SlidingLimit` name. */
export interface RateLimitUsageReport {
  limits: Record<string, RateLimitUsageEntry>;
}

/** Options of {@link RateLimitUsage.of}. */
export interface RateLimitUsageOptions {
  /** Only these limit names (default: every named limit of the application's routes). */
  names?: readonly string[];
  /** The context keys and policies are resolved in; default: one made for the request. */
  context?: ExecutionContext;
}

/**
 * How much of each named limit a caller has left (GitHub's `GET /rate_limit`), resolved as the guard
 * resolves a request and read with `FCALL_RO`: it consumes nothing. Report only limits keyed by the
 * caller's identity, or anyone can read anyone's usage (docs/limits-as-data.md).
 */
@Injectable()
export class RateLimitUsage {
  constructor(
    private readonly plans: SlidingLimitPlans,
    private readonly guard: SlidingLimitGuard,
    private readonly limiter: SlidingWindowLimiter,
  ) {}

  /** The named limits keyed by the caller's own identity, and those left out because any caller can name their keys. */
  callersOwnNames(): { names: string[]; leftOut: string[] } {
    const names = new Set<string>();
    const leftOut = new Set<string>();
    for (const plan of this.plans.all()) {
      for (const limit of plan.limits) {
        if (limit.named) (limit.namedByCaller ? leftOut : names).add(limit.name);
      }
    }
    // A name keyed by the caller's identity on one route and by a free value on another is left out.
    return { names: [...names].filter((name) => !leftOut.has(name)).sort(), leftOut: [...leftOut].sort() };
  }

  /** The caller's named limits. A limit whose key the request cannot give (no API key) is left out. */
  async of(request: RateLimitRequest, options: RateLimitUsageOptions = {}): Promise<RateLimitUsageReport> {
    // The handler is what a key function's context.getHandler() sees; it is never called from there.
    // eslint-disable-next-line @typescript-eslint/unbound-method
    const context = options.context ?? new ExecutionContextHost([request], RateLimitUsage, this.of);
    const wanted = options.names === undefined ? undefined : new Set(options.names);
    const limits: Record<string, RateLimitUsageEntry> = {};
    await Promise.all(
      plansOf(this.plans.all(), wanted).map(async ({ plan, names }) => {
        let resolved;
        try {
          resolved = await this.guard.resolveLimits(plan, request, context);
        } catch {
          // No identity for this plan's keys (the guard would answer 403): nothing of the caller's to report.
          return;
        }
        if (!resolved) return;
        await Promise.all(
          plan.limits.map(async (limit, i) => {
            if (!names.has(limit.name)) return;
            const rule = resolved.rules[i];
            const state = await this.limiter.peek(rule.key, rule);
            const entry: RateLimitUsageEntry = {
              policy: resolved.named[i].name,
              limit: state.limit,
              remaining: Math.max(0, state.remaining),
              used: state.count,
              reset: toWholeSeconds(state.resetMs),
              windowMs: rule.windowMs,
            };
            if (rule.mode === 'shadow') entry.shadow = true;
            if (state.override !== undefined) entry.override = state.override;
            if (state.degraded !== undefined) entry.degraded = state.degraded;
            limits[limit.name] = entry;
          }),
        );
      }),
    );
    return { limits: sortedByName(limits) };
  }
}

/** The plans to read and the limit names each reports: each named limit from the first route that has it. */
function plansOf(
  plans: readonly HandlerPlan[],
  wanted: Set<string> | undefined,
): { plan: HandlerPlan; names: Set<string> }[] {
  const seen = new Set<string>();
  const chosen: { plan: HandlerPlan; names: Set<string> }[] = [];
  for (const plan of plans) {
    const names = new Set<string>();
    for (const limit of plan.limits) {
      if (!limit.named || seen.has(limit.name) || (wanted && !wanted.has(limit.name))) continue;
      seen.add(limit.name);
      names.add(limit.name);
    }
    if (names.size > 0) chosen.push({ plan, names });
  }
  return chosen;
}

function sortedByName(limits: Record<string, RateLimitUsageEntry>): Record<string, RateLimitUsageEntry> {
  return Object.fromEntries(Object.entries(limits).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
