import type { AllowCall, FunctionContract, SERVER_TIME } from '../../core/function-contract';
import type { SlidingLimitRule } from '../../core/limit-rule';
import { canCarryOverride, overrideKeyOf } from '../../core/override-keys';
import { parseV2Decision, parseV2Decisions } from './v2-replies';

/** flags_i of v2's ARGV: 1 for a shadow limit, plus 2 when its override key follows the limit keys. */
const SHADOW = 1;
const OVERRIDE_KEY = 2;

/** The override key read for limit `i`, or undefined (overrides off, opted out, or no valid hash tag). */
function overrideKeyFor(readOverrides: boolean, rule: SlidingLimitRule, key: string): string | undefined {
  return readOverrides && rule.overrides !== false ? overrideKeyOf(key) : undefined;
}

/** Whether limit `i` reads an override: {@link overrideKeyFor} without building the key. */
function readsOverride(readOverrides: boolean, rule: SlidingLimitRule, key: string): boolean {
  return readOverrides && rule.overrides !== false && canCarryOverride(key);
}

/** Writes the limit keys, then the override keys read, into `all` from `at`; returns the end. */
function writeKeys(
  all: string[],
  at: number,
  readOverrides: boolean,
  keys: readonly string[],
  rules: readonly SlidingLimitRule[],
): number {
  for (let i = 0; i < keys.length; i++) all[at++] = keys[i];
  if (!readOverrides) return at;
  for (let i = 0; i < rules.length; i++) {
    const overrideKey = overrideKeyFor(true, rules[i], keys[i]);
    if (overrideKey !== undefined) all[at++] = overrideKey;
  }
  return at;
}

/** The limit keys, then the override keys read: one list, sized once. */
function keysOf(readOverrides: boolean, keys: readonly string[], rules: readonly SlidingLimitRule[]): string[] {
  const all = new Array<string>(readOverrides ? 2 * keys.length : keys.length);
  // Every limit reads its override, but for keys that opt out or cannot carry one.
  all.length = writeKeys(all, 0, readOverrides, keys, rules);
  return all;
}

/** Writes the (window_ms, limit, precision_ms, flags) quadruples of v2's ARGV into `args` from `at` on. */
function writeQuadruples(
  args: (string | number)[],
  at: number,
  readOverrides: boolean,
  keys: readonly string[],
  rules: readonly SlidingLimitRule[],
): void {
  for (let i = 0; i < rules.length; i++, at += 4) {
    const rule = rules[i];
    args[at] = rule.windowMs;
    args[at + 1] = rule.limit;
    args[at + 2] = rule.precisionMs ?? 0;
    args[at + 3] =
      (rule.mode === 'shadow' ? SHADOW : 0) + (readsOverride(readOverrides, rule, keys[i]) ? OVERRIDE_KEY : 0);
  }
}

/** Writes an allow call's ARGV into `list` from `at` on: now, member, skew, cost, then the quadruples. */
function writeAllowArguments(list: (string | number)[], at: number, call: AllowCall): void {
  const { keys, rules, nowMs, member, maxClockSkewMs, cost = 1, overrides = false } = call;
  list[at] = wholeNow(nowMs);
  list[at + 1] = member;
  list[at + 2] = maxClockSkewMs;
  list[at + 3] = cost;
  writeQuadruples(list, at + 4, overrides, keys, rules);
}

/** v2 takes whole milliseconds: a caller's clock with a fraction is rounded down. */
function wholeNow(nowMs: number | typeof SERVER_TIME): number | typeof SERVER_TIME {
  return typeof nowMs === 'number' ? Math.floor(nowMs) : nowMs;
}

/**
 * rate_limit_v2: the log or the bounded window, a cost, shadow limits and per-key overrides (their keys
 * after the limit keys). Log keys are v1's, so both serve the same keys. See `rate_limit_v2.lua`.
 */
export const V2_CONTRACT: FunctionContract = {
  version: 'v2',
  libraryName: 'rate_limit_v2',
  sourceFile: 'rate_limit_v2.lua',
  allowFunction: 'sliding_allow_v2',
  peekFunction: 'sliding_peek_v2',
  full: true,

  allowArguments(call: AllowCall) {
    // One list of its final length: built by pushes, it would grow (and be copied) on the way.
    const args = new Array<string | number>(4 + 4 * call.rules.length);
    writeAllowArguments(args, 0, call);
    return args;
  },

  allowKeys({ keys, rules, overrides = false }: AllowCall) {
    return keysOf(overrides, keys, rules);
  },

  allowKeyCount({ keys, rules, overrides = false }: AllowCall) {
    let count = keys.length;
    for (let i = 0; overrides && i < rules.length; i++) if (readsOverride(true, rules[i], keys[i])) count++;
    return count;
  },

  allowKeysAndArguments(call: AllowCall, keyCount: number) {
    const { keys, rules, overrides = false } = call;
    const list = new Array<string | number>(keyCount + 4 + 4 * rules.length);
    writeKeys(list as string[], 0, overrides, keys, rules);
    writeAllowArguments(list, keyCount, call);
    return list;
  },

  parseAllowReply(reply, rules) {
    return parseV2Decision(reply, rules, 'FCALL sliding_allow_v2');
  },

  batch: {
    name: 'sliding_allow_many_v2',

    arguments(calls) {
      // One list of its final length, as for a single call: pushes would grow it (a copy each time).
      let length = 0;
      for (const { rules } of calls) length += 4 + 4 * rules.length;
      const decisions = new Array<string | number>(length);
      let at = 0;
      for (const { keys, rules, nowMs, member, cost = 1, overrides = false } of calls) {
        decisions[at] = wholeNow(nowMs);
        decisions[at + 1] = member;
        decisions[at + 2] = cost;
        decisions[at + 3] = rules.length;
        writeQuadruples(decisions, at + 4, overrides, keys, rules);
        at += 4 + 4 * rules.length;
      }
      return [calls[0].maxClockSkewMs, JSON.stringify(decisions)];
    },

    keys(calls) {
      let most = 0;
      for (const { keys: own, overrides = false } of calls) most += overrides ? 2 * own.length : own.length;
      const keys = new Array<string>(most);
      let length = 0;
      for (const { keys: own, rules, overrides = false } of calls)
        length = writeKeys(keys, length, overrides, own, rules);
      keys.length = length;
      return keys;
    },

    parseReply(reply, calls) {
      return parseV2Decisions(reply, calls, 'FCALL sliding_allow_many_v2');
    },
  },

  peekArguments(nowMs, rules, cost = 1, keys) {
    const args: (string | number)[] = [wholeNow(nowMs), cost];
    writeQuadruples(args, 2, keys !== undefined, keys ?? [], rules);
    return args;
  },

  peekKeys(keys, rules) {
    return keysOf(true, keys, rules);
  },

  parsePeekReply(reply, rules) {
    return parseV2Decision(reply, rules, 'FCALL_RO sliding_peek_v2');
  },
};
