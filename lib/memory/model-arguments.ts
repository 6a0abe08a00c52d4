import { formatLuaInteger, isFiniteNumber, luaToNumber } from './lua-values';
import type { ModelCommands } from './model-commands';
import { ModelReplyError } from './model-reply-error';

/*
 * What the Lua libraries share for reading their arguments (rate_limit_v2.lua's
 * helpers), in the model.
 */

export const INVALID_ARGUMENTS = 'ERR invalid arguments';
/** The Lua's MAX_WINDOW_MS: longer windows are refused before any write. */
export const MAX_WINDOW_MS = 1e15;
/** The Lua's MAX_TIME_MS: times and tolerances outside 0 … 1e15 ms are refused before any write. */
export const MAX_TIME_MS = 1e15;

/** The Lua's `is_time`. */
export function isTime(value: number | undefined): value is number {
  return isFiniteNumber(value) && value >= 0 && value <= MAX_TIME_MS;
}

/** The Lua's `n % 1 == 0` (Lua's `%` floors: a - floor(a / b) * b; NaN for infinities). */
export function isWhole(n: number): boolean {
  return n - Math.floor(n) === 0;
}

/** `now_ms`: a number, or `*` for the server's clock (TIME, read as the Lua reads it). */
export function resolveNow(commands: ModelCommands, arg: string): number | undefined {
  if (arg === '*') {
    const [seconds, micros] = commands.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }
  const nowMs = luaToNumber(arg);
  return isTime(nowMs) ? nowMs : undefined;
}

/** The Lua's `clock_skew` error reply (`%d` truncates, as the C cast does). */
export function clockSkewError(nowMs: number, newest: number, key: string, maxSkewMs: number): ModelReplyError {
  return new ModelReplyError(
    `CLOCKSKEW now_ms ${formatLuaInteger(nowMs)} is ${formatLuaInteger(newest - nowMs)} ms behind the newest entry of ${key} ` +
      `(tolerance ${formatLuaInteger(maxSkewMs)} ms)`,
  );
}

/**
 * The decisions argument of a batch function (the Lua's `decode_decisions`): a JSON array, or
 * undefined. JSON.parse is stricter than the Lua's cjson about number spellings (cjson also reads
 * `0x10` or `NaN`); the two agree on everything JSON.stringify writes, which is all this package sends.
 * (A JSON object decodes to a Lua table too, of length 0: the Lua then finds no decision for its keys
 * and refuses the call, as here.)
 */
export function decodeDecisions(text: string | undefined): unknown[] | undefined {
  try {
    const list: unknown = JSON.parse(text ?? '');
    return Array.isArray(list) ? list : undefined;
  } catch {
    return undefined;
  }
}
