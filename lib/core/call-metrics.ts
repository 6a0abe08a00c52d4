import type { LatencySummary } from './latency-histogram';

/** Why a call failed, as counted in the metrics: `redis` is an error reply (e.g. OOM). */
export type LimiterErrorKind = 'timeout' | 'connection' | 'function_not_loaded' | 'clock_skew' | 'redis' | 'other';

/** Whether a kind read from elsewhere (a report of a newer package, say) is a {@link LimiterErrorKind}. */
export function isLimiterErrorKind(kind: string): kind is LimiterErrorKind {
  return /^(timeout|connection|function_not_loaded|clock_skew|redis|other)$/.test(kind);
}

export interface FunctionCallMetrics {
  functionName: string;
  /** Decisions asked of Redis (consume and consumeAll calls that reached it, or failed trying). */
  calls: number;
  allowed: number;
  /** Rejections, including those of the block cache. */
  rejected: number;
  /** Rejections made by the local block cache, without a Redis call. */
  blockedLocally?: number;
  errors: Partial<Record<LimiterErrorKind, number>>;
  /** Decisions made without Redis, by how: the onRedisError policy or the insurance limiter. */
  fallbacks?: Partial<Record<FallbackKind, number>>;
  latencyMs: LatencySummary;
}

/** How a decision was made without Redis. */
export type FallbackKind = 'allow' | 'deny' | 'insurance';
