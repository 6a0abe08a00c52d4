import { isFiniteNumber, luaToNumber } from './lua-values';
import { INVALID_ARGUMENTS, MAX_WINDOW_MS, isTime, isWhole } from './model-arguments';
import type { ModelCommands } from './model-commands';
import { ModelReplyError } from './model-reply-error';

/** `rate_limit_v1.lua`'s sliding_allow_v1 in plain TypeScript, line by line. */
export function slidingAllowV1(commands: ModelCommands, keys: readonly string[], args: readonly string[]): number[] {
  const key = keys[0];
  const nowMs = luaToNumber(args[0]);
  const windowMs = luaToNumber(args[1]);
  const limit = luaToNumber(args[2]);
  const member = args[3];
  if (
    key === undefined ||
    !isTime(nowMs) ||
    !isFiniteNumber(windowMs) ||
    !isFiniteNumber(limit) ||
    windowMs <= 0 ||
    windowMs > MAX_WINDOW_MS ||
    limit <= 0 ||
    !isWhole(limit) ||
    member === undefined ||
    member === ''
  ) {
    throw new ModelReplyError(INVALID_ARGUMENTS);
  }

  commands.zremrangebyscore(key, nowMs - windowMs);
  const count = commands.zcard(key);
  if (count >= limit) return [0, 0];

  commands.zadd(key, nowMs, member);
  commands.pexpire(key, Math.ceil(windowMs));
  return [1, limit - count - 1];
}
