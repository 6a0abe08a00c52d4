import { formatLuaInteger, luaToNumber } from '../lua-values';
import { MAX_TIME_MS, isWhole } from '../model-arguments';
import type { ModelCommands } from '../model-commands';
import { ModelReplyError, WRONGTYPE } from '../model-reply-error';

/* lib/redis/lua/rate_limit_v2/arguments.lua: the readers of the arguments. */

export const MAX_LIMIT = 1e15;

/** `whole`: `n` when it is a whole number from `low` to `high`. */
export function whole(n: number | undefined, low: number, high: number): number | undefined {
  return n !== undefined && n >= low && n <= high && isWhole(n) ? n : undefined;
}

/** `number`: a decoded JSON value when it is a number. */
export function number(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

export const digits = formatLuaInteger;

/** `resolve_now`: TIME read as the Lua reads it for `*`. */
export function resolveNow(commands: ModelCommands, text: string | undefined): number | undefined {
  if (text !== '*') return whole(luaToNumber(text), 0, MAX_TIME_MS);
  const [seconds, micros] = commands.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** `is_valid_member`: no whitespace (C isspace) and no '#'. */
export function isValidMember(member: unknown): member is string {
  return typeof member === 'string' && member !== '' && !/[ \t\n\v\f\r#]/.test(member);
}

/** `protected_call` and `is_wrong_type`: the command's result, or undefined for a key of the other type. */
export function unlessWrongType<T>(command: () => T): T | undefined {
  try {
    return command();
  } catch (error) {
    if (error instanceof ModelReplyError && error.message === WRONGTYPE) return undefined;
    throw error;
  }
}

/**
 * The batch's cjson.decode: a JSON array, or undefined. JSON.parse is stricter than cjson about
 * number spellings (cjson also reads `0x10` or `NaN`); the two agree on everything JSON.stringify
 * writes, which is all this package sends. (A JSON object decodes to a Lua table of length 0: the
 * Lua then finds no decision for its keys and refuses the call, as here.)
 */
export function decodeDecisions(text: string | undefined): unknown[] | undefined {
  try {
    const list: unknown = JSON.parse(text ?? '');
    return Array.isArray(list) ? list : undefined;
  } catch {
    return undefined;
  }
}
