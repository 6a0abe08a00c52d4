// Load loops and the arithmetic of the report: every loop is bounded in time and in count, and every
// comparison is a ratio of two measurements taken next to each other, repeated over rounds.
import { performance } from 'node:perf_hooks';

/** Median of numbers (mean of the middle two for an even count). */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** `{ median, min, max, samples }` of a list of numbers. */
export function spread(values) {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), samples: values };
}

/** Percentile (0..100) of the first `count` values of a typed array, nearest rank. */
export function percentile(values, count, p) {
  if (count === 0) return NaN;
  const sorted = values.slice(0, count).sort();
  return sorted[Math.min(count - 1, Math.max(0, Math.ceil((p / 100) * count) - 1))];
}

/**
 * Keeps `inFlight` calls outstanding for `warmupMs + durationMs` (or until `maxOps` calls); the rate
 * counts only calls completing after the warm-up. `call(i)` resolves to true (admitted), false
 * (rejected) or 'degraded' (decided without Redis), counted over the whole run; a thrown error is
 * counted and stops nothing. The clock is read after every call, not left to timers: a call answered
 * in-process (the block cache) resolves in a microtask and would never let a timer fire.
 */
export async function drive({ inFlight, warmupMs, durationMs, maxOps, call }) {
  let issued = 0;
  let done = 0;
  let admitted = 0;
  let rejected = 0;
  let degraded = 0;
  let errors = 0;
  let firstError;
  let stop = false;
  let counted = 0;
  const began = performance.now();
  const measureFrom = began + warmupMs;
  const stopAt = measureFrom + durationMs;
  let startedAt = warmupMs > 0 ? Infinity : began;

  const worker = async () => {
    while (!stop && issued < maxOps) {
      const i = issued++;
      try {
        const outcome = await call(i);
        if (outcome === 'degraded') degraded++;
        else if (outcome) admitted++;
        else rejected++;
      } catch (error) {
        errors++;
        firstError ??= error;
      }
      done++;
      const now = performance.now();
      if (now >= stopAt) stop = true;
      if (now >= measureFrom) {
        if (startedAt === Infinity) startedAt = now;
        else counted++;
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const finishedAt = performance.now();
  if (startedAt === Infinity || counted === 0) {
    // maxOps reached inside the warm-up: measure the whole run instead.
    startedAt = began;
    counted = done;
  }
  const seconds = (finishedAt - startedAt) / 1000;
  return {
    perSecond: counted / seconds,
    counted,
    calls: done,
    admitted,
    rejected,
    degraded,
    errors,
    firstError,
    seconds,
  };
}

/**
 * The order in which `ids` run in one round: `slices` passes over all of them, each pass starting one
 * further on (A B C, B C A, …) and every round one further again, so that bursts of other work on the
 * machine hit every variant alike and each ratio pairs measurements taken together.
 */
export function interleaved(ids, slices, round) {
  const order = [];
  for (let slice = 0; slice < slices; slice++) {
    for (let k = 0; k < ids.length; k++) order.push(ids[(k + slice + round) % ids.length]);
  }
  return order;
}

/** For `samples[id][round] = { name: value, … }`: one value's rounds (`metric`) and their median (`med`). */
export function metricsOf(samples) {
  const metric = (id, name) => samples[id].map((r) => r[name]);
  return { metric, med: (id, name) => median(metric(id, name)) };
}

/** `a / b` for every round. */
export function ratios(a, b) {
  return a.map((value, i) => value / b[i]);
}

/** 12345.6 → "12.3k", 1234567 → "1.23M". */
export function compact(n) {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (Math.abs(n) >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  if (Math.abs(n) >= 1e3) return `${(n / 1e3).toFixed(2)}k`;
  return n.toFixed(n >= 100 ? 0 : 2);
}
