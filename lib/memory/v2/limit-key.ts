import type { ModelCommands } from '../model-commands';
import { readHash } from './bucketed-read';
import { logAsBuckets, recordBuckets } from './bucketed-write';
import { readLog, recordLog } from './log';
import { idsHold } from './recent-ids';
import type { KeyState, Limit, LogState } from './types';

/* lib/redis/lua/rate_limit_v2/limit_key.lua: a limit's key, whichever it holds. */

export function readKey(commands: ModelCommands, lim: Limit, nowMs: number, writes: boolean): KeyState {
  const log = lim.precisionMs === 0 ? readLog(commands, lim, nowMs, writes) : undefined;
  if (log) return log;
  const state = readHash(commands, lim.key, nowMs, lim.windowMs, lim.precisionMs);
  // Not a hash: in the model, a sorted set.
  if (state === undefined) return readLog(commands, lim, nowMs, writes) as LogState;
  if (state.newest !== undefined && state.newest * state.precisionMs > nowMs) {
    state.ahead = state.newest * state.precisionMs;
  }
  return state;
}

export function holds(commands: ModelCommands, lim: Limit, member: string): boolean {
  if (lim.retried === undefined) {
    const state = lim.state as KeyState;
    lim.retried =
      state.precisionMs === undefined ? commands.zscore(lim.key, member) !== undefined : idsHold(state.ids, member);
  }
  return lim.retried;
}

export function record(commands: ModelCommands, lim: Limit, nowMs: number, member: string, cost: number): number {
  const state = lim.state as KeyState;
  if (state.precisionMs === undefined && lim.precisionMs === 0) return recordLog(commands, lim, state, member, cost);
  if (holds(commands, lim, member)) return 0;
  // A log read by a bucketed limit becomes a hash of the limit's precision.
  const buckets = state.precisionMs === undefined ? logAsBuckets(commands, lim, state) : state;
  lim.state = buckets;
  recordBuckets(commands, lim.key, buckets, nowMs, lim.windowMs, member, cost, lim.effective);
  return cost;
}
