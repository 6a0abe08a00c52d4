// Bucket upper bounds in ms, 4 per doubling from 0.01 ms to ~42 s: percentiles within 19%, found by one logarithm.
const SMALLEST_MS = 0.01;
const PER_DOUBLING = 4;
const BOUNDS_MS: readonly number[] = Array.from({ length: 89 }, (_, i) => SMALLEST_MS * 2 ** (i / PER_DOUBLING));

/** Latency upper bounds (ms) of the histogram's buckets, the last one being +Infinity. */
export const LATENCY_BUCKETS_MS: readonly number[] = [...BOUNDS_MS, Number.POSITIVE_INFINITY];

/** The bounds the exports show: every 4th (one per doubling, 10 µs … 42 s), so they count exactly. */
export const EXPORTED_BOUND_INDEXES = LATENCY_BUCKETS_MS.map((_, i) => i).filter(
  (i) => i % 4 === 0 && Number.isFinite(LATENCY_BUCKETS_MS[i]),
);
export const EXPORTED_BOUNDS_SECONDS = EXPORTED_BOUND_INDEXES.map((i) =>
  Number((LATENCY_BUCKETS_MS[i] / 1000).toPrecision(6)),
);

/** Latency percentiles, in milliseconds. */
export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** A cumulative latency histogram with fixed log-spaced buckets. */
export class LatencyHistogram {
  private readonly counts = new Array<number>(LATENCY_BUCKETS_MS.length).fill(0);
  private total = 0;
  private sumMs = 0;
  private maxMs = 0;

  observe(ms: number): void {
    let i = ms <= SMALLEST_MS ? 0 : Math.min(BOUNDS_MS.length, Math.ceil(PER_DOUBLING * Math.log2(ms / SMALLEST_MS)));
    // Floating point may land one bucket off at a bound; settle it against the bounds themselves.
    if (i > 0 && ms <= BOUNDS_MS[i - 1]) i--;
    else if (i < BOUNDS_MS.length && ms > BOUNDS_MS[i]) i++;
    this.counts[i]++;
    this.total++;
    this.sumMs += ms;
    if (ms > this.maxMs) this.maxMs = ms;
  }

  /** Counts per bucket (not cumulative), aligned with {@link LATENCY_BUCKETS_MS}. */
  bucketCounts(): readonly number[] {
    return this.counts;
  }

  get count(): number {
    return this.total;
  }

  get sum(): number {
    return this.sumMs;
  }

  summary(): LatencySummary {
    return {
      count: this.total,
      p50: this.percentile(0.5),
      p90: this.percentile(0.9),
      p99: this.percentile(0.99),
      max: this.maxMs,
    };
  }

  /** The upper bound of the bucket holding the q-th observation (capped by the largest seen). */
  private percentile(q: number): number {
    if (this.total === 0) return 0;
    const rank = Math.ceil(q * this.total);
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i];
      if (seen >= rank) return Math.min(LATENCY_BUCKETS_MS[i], this.maxMs);
    }
    return this.maxMs;
  }
}
