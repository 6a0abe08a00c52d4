import { luaToNumber } from '../lua-values';
import { MAX_TIME_MS } from '../model-arguments';
import { MAX_LIMIT, isValidMember, number, whole } from './arguments';
import type { Limit } from './types';

/* lib/redis/lua/rate_limit_v2/limits.lua (keys and arguments indexed from 0 here). */

export const MAX_SUB_WINDOWS = 1000;
const MAX_LOG_COST = 10_000;

/** `is_valid_limit` and the limit `decision_limits` sets, its four numbers (window_ms, limit, precision_ms, flags) as one array. */
function newLimit(quadruple: (number | undefined)[], cost: number): Limit | undefined {
  const windowMs = whole(quadruple[0], 1, MAX_TIME_MS);
  const limit = whole(quadruple[1], cost, MAX_LIMIT);
  const precisionMs = whole(quadruple[2], 0, MAX_TIME_MS);
  const flags = whole(quadruple[3], 0, 3);
  if (windowMs === undefined || limit === undefined || precisionMs === undefined || flags === undefined) {
    return undefined;
  }
  if (precisionMs === 0 ? cost > MAX_LOG_COST : precisionMs > windowMs || windowMs > precisionMs * MAX_SUB_WINDOWS) {
    return undefined;
  }
  const shadow = flags % 2 === 1;
  return { windowMs, precisionMs, shadow, hasOverride: flags >= 2, kind: 0, effective: limit, key: '', room: false };
}

/** The index of the last key taken, or undefined for a repeated key. */
function assignKeys(keys: readonly string[], first: number, limits: Limit[]): number | undefined {
  let at = first + limits.length - 1;
  for (let i = 0; i < limits.length; i++) {
    const lim = limits[i];
    lim.key = keys[first + i];
    for (let j = 0; j < i; j++) if (limits[j].key === lim.key) return undefined;
    if (lim.hasOverride) lim.overrideKey = keys[++at];
  }
  return at;
}

/** The quadruples from args[first], the cost just before; undefined when the arguments are invalid. */
export function limitsOfCall(keys: readonly string[], args: readonly string[], first: number) {
  const n = (args.length - first) / 4;
  const cost = whole(luaToNumber(args[first - 1]), 1, MAX_TIME_MS);
  // At most 1,000 limits, as in a batch: the Lua puts a single call's ARGV in a batch's form.
  if (n < 1 || n > 1000 || !Number.isInteger(n) || cost === undefined) return undefined;
  const limits: Limit[] = [];
  for (let at = first; at < args.length; at += 4) {
    const lim = newLimit(args.slice(at, at + 4).map(luaToNumber), cost);
    if (!lim) return undefined;
    limits.push(lim);
  }
  if (assignKeys(keys, 0, limits) !== keys.length - 1) return undefined;
  return { limits, cost, overridesFrom: n };
}

/** The decision at list[at] of a batch, its keys from keys[taken]; undefined when it is invalid. */
export function batchDecision(keys: readonly string[], list: readonly unknown[], at: number, taken: number) {
  const [now, member] = [list[at], list[at + 1]];
  const cost = whole(number(list[at + 2]), 1, MAX_TIME_MS);
  const n = whole(number(list[at + 3]), 1, 1000);
  if ((now !== '*' && whole(number(now), 0, MAX_TIME_MS) === undefined) || !isValidMember(member)) return undefined;
  if (cost === undefined || n === undefined) return undefined;
  const limits: Limit[] = [];
  for (let q = at + 4; q <= at + 4 * n; q += 4) {
    const lim = newLimit(list.slice(q, q + 4).map(number), cost);
    if (!lim) return undefined;
    limits.push(lim);
  }
  const last = assignKeys(keys, taken, limits);
  if (last === undefined || last > keys.length - 1) return undefined;
  return { limits, now: now as number | '*', member, cost, overridesFrom: taken + n, last };
}
