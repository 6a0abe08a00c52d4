import type { ModelCommands } from '../model-commands';
import { scanHeld, untilBucketLeaves } from './bucketed-read';
import { BLOCK, EXEMPT, untilOverrideEnds } from './overrides';
import type { BucketState, Limit, LogState } from './types';

/* lib/redis/lua/rate_limit_v2/replies.lua: a limit's seven integers of a decision's reply. */

function logRetryAfter(commands: ModelCommands, lim: Limit, state: LogState, cost: number, limit: number): number {
  const entry = commands.inWindow(lim.key, state.cutoffMs)[state.count + cost - limit - 1];
  return Math.ceil(entry + lim.windowMs - state.nowMs);
}

function leavingIndex(commands: ModelCommands, key: string, state: BucketState, limit: number, cost: number) {
  let left = state.count;
  const newest = state.newest as number;
  if (state.counts) {
    for (const index of [...(state.indexes as number[])].sort((a, b) => a - b)) {
      left -= state.counts.get(index) as number;
      if (left + cost <= limit) return index;
    }
    return newest;
  }
  const fits = (count: number) => {
    left -= count;
    return left + cost <= limit;
  };
  // The oldest alone first: it is usually held and enough.
  return scanHeld(commands, key, state.oldest as number, newest, 1, fits) ?? newest;
}

/** `append_limit`: a limit's seven integers, pushed onto the reply. */
export function appendLimit(
  commands: ModelCommands,
  reply: number[],
  lim: Limit,
  allowed: number,
  nowMs: number,
  cost: number,
) {
  let values: number[];
  if (lim.kind === EXEMPT) {
    values = [1, 0, lim.effective, 0, 0];
  } else if (lim.kind === BLOCK) {
    values = [0, 0, 0, untilOverrideEnds(commands, lim), 0];
  } else {
    const state = lim.state as LogState | BucketState;
    const limit = lim.effective;
    const count = state.count;
    let retryAfterMs = 0;
    let resetMs = 0;
    if (!lim.room && (lim.shadow || allowed === 0)) {
      if (cost > limit) retryAfterMs = untilOverrideEnds(commands, lim);
      else if (state.precisionMs !== undefined) {
        const index = leavingIndex(commands, lim.key, state, limit, cost);
        retryAfterMs = untilBucketLeaves(index, nowMs, lim.windowMs, state.precisionMs);
      } else retryAfterMs = logRetryAfter(commands, lim, state, cost, limit);
    }
    if (count > 0 && state.precisionMs !== undefined) {
      resetMs = untilBucketLeaves(state.newest as number, nowMs, lim.windowMs, state.precisionMs);
    } else if (count > 0) {
      // The window holds entries: the newest is read already when after now_ms, else it is the last.
      const newestMs = state.ahead === undefined ? commands.newestScore(lim.key) : state.ahead;
      resetMs = Math.ceil((newestMs as number) + lim.windowMs - nowMs);
    }
    values = [lim.room ? 1 : 0, count, Math.max(limit - count, 0), retryAfterMs, resetMs];
  }
  reply.push(...values, lim.effective, lim.kind);
}
