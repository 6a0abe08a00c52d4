import type { ModelCommands } from '../model-commands';
import { unlessWrongType } from './arguments';
import type { Limit, LogState } from './types';

/* lib/redis/lua/rate_limit_v2/log.lua: a limit's exact window, a sorted set. */

/** Undefined when the key is a hash. */
export function readLog(commands: ModelCommands, lim: Limit, nowMs: number, writes: boolean): LogState | undefined {
  const cutoffMs = nowMs - lim.windowMs;
  const later = unlessWrongType(() => commands.countAfter(lim.key, nowMs));
  if (later === undefined) return undefined;
  const state: LogState = { count: 0, nowMs, cutoffMs };
  if (writes) {
    commands.zremrangebyscore(lim.key, cutoffMs);
    state.count = commands.zcard(lim.key);
  } else {
    state.count = commands.countAfter(lim.key, cutoffMs);
  }
  if (later > 0) state.ahead = commands.newestScore(lim.key);
  return state;
}

export function recordLog(commands: ModelCommands, lim: Limit, state: LogState, member: string, cost: number): number {
  const { key, windowMs } = lim;
  if (commands.zaddNx(key, state.nowMs, member) === 0) return 0;
  for (let k = 2; k <= cost; k++) commands.zadd(key, state.nowMs, `${member}#${k}`);
  state.ahead ??= state.nowMs;
  commands.pexpire(key, Math.ceil(state.ahead + windowMs - state.nowMs));
  state.count += cost;
  return cost;
}
