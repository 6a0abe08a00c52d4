import type { SlidingWindowLimiter } from '../../lib';
import { sleep } from './sleep';
import { waitFor, waitUntil } from './wait-for';

/** One consume the traffic loops made, and how it ended. */
export interface TrafficCall {
  key: string;
  startedAt: number;
  endedAt: number;
  allowed: boolean;
  /** Set when the limiter's policy decided instead of Redis. */
  degraded?: string;
  /** Set when the call threw. */
  error?: string;
}

/** A limit nothing reaches: the loops measure availability, not limiting. */
export const ROOMY = { limit: 1_000_000, windowMs: 60_000 };

export interface TrafficOptions {
  concurrency: number;
  /** Pause after each call, so loops do not spin when calls fail fast. Default 0. */
  pauseMs?: number;
  /** The clock of startedAt/endedAt. Default `Date.now`. */
  now?: () => number;
}

/** Keeps `concurrency` consume loops busy over `keys` until `stop()`; records every outcome. */
export function startTraffic(
  limiter: SlidingWindowLimiter,
  keys: readonly string[],
  { concurrency, pauseMs = 0, now = Date.now }: TrafficOptions,
) {
  let running = true;
  let next = 0;
  const calls: TrafficCall[] = [];
  const loop = async () => {
    while (running) {
      const key = keys[next++ % keys.length];
      const startedAt = now();
      try {
        const decision = await limiter.consume(key, ROOMY);
        calls.push({ key, startedAt, endedAt: now(), allowed: decision.allowed, degraded: decision.degraded });
      } catch (error) {
        calls.push({ key, startedAt, endedAt: now(), allowed: false, error: (error as Error).message });
      }
      if (pauseMs > 0) await sleep(pauseMs);
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  return {
    calls,
    async stop(): Promise<TrafficCall[]> {
      running = false;
      await Promise.all(loops);
      return calls;
    },
    /**
     * Waits (up to `timeoutMs`, 20 s by default) until the loops have made `count` more calls than
     * they have now, or more of those `which` accepts: traffic measured by calls, not by time,
     * which a loaded host stretches.
     */
    async moreCalls(
      count: number,
      { which = () => true, timeoutMs = 20_000 }: { which?: (call: TrafficCall) => boolean; timeoutMs?: number } = {},
    ): Promise<void> {
      const counted = () => calls.filter(which).length;
      const target = counted() + count;
      await waitUntil(() => counted() >= target, { timeoutMs, intervalMs: 5 });
    },
    /**
     * Waits (up to `timeoutMs`) for the first call Redis decided that ended after `sinceMs`, lets the
     * loops run `settleMs` more, then stops them: the recovery specs' measurement after an outage.
     */
    async stopAfterFirstDecision(
      sinceMs: number,
      { timeoutMs, settleMs }: { timeoutMs: number; settleMs: number },
    ): Promise<{ firstDecidedAt: number; calls: TrafficCall[]; degraded: TrafficCall[] }> {
      const decided = await waitFor(
        () => firstDecidedAfter(calls, sinceMs),
        (call) => call !== undefined,
        { timeoutMs, intervalMs: 5 },
      );
      await sleep(settleMs);
      await this.stop();
      return {
        firstDecidedAt: (decided as TrafficCall).endedAt,
        calls,
        degraded: calls.filter((call) => call.degraded !== undefined),
      };
    },
  };
}

/** The first call Redis decided that ended after `since`. */
export function firstDecidedAfter(calls: readonly TrafficCall[], since: number): TrafficCall | undefined {
  let first: TrafficCall | undefined;
  for (const call of calls)
    if (call.degraded === undefined && call.error === undefined && call.endedAt > since)
      if (!first || call.endedAt < first.endedAt) first = call;
  return first;
}
