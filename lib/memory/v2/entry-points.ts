import { luaToNumber } from '../lua-values';
import { INVALID_ARGUMENTS, MAX_TIME_MS } from '../model-arguments';
import type { ModelCommands } from '../model-commands';
import { ModelReplyError } from '../model-reply-error';
import { decodeDecisions, isValidMember, resolveNow, whole } from './arguments';
import { decide } from './decide';
import { batchDecision, limitsOfCall } from './limits';
import { readOverrides } from './overrides';

/*
 * lib/redis/lua/rate_limit_v2/entry_points.lua: sliding_allow_v2, sliding_peek_v2 and
 * sliding_allow_many_v2, taking KEYS and ARGV as strings (indexed from 0 here); an error reply is
 * thrown as a ModelReplyError.
 */

export function slidingAllowV2(commands: ModelCommands, keys: readonly string[], args: readonly string[]): number[] {
  const parsed = limitsOfCall(keys, args, 4);
  const nowMs = resolveNow(commands, args[0]);
  const maxSkewMs = whole(luaToNumber(args[2]), 0, MAX_TIME_MS);
  if (!parsed || nowMs === undefined || maxSkewMs === undefined || !isValidMember(args[1])) {
    throw new ModelReplyError(INVALID_ARGUMENTS);
  }
  const reply: number[] = [];
  readOverrides(commands, keys, parsed.overridesFrom, keys.length - 1, parsed.limits);
  decide(commands, reply, parsed.limits, nowMs, args[1], maxSkewMs, parsed.cost);
  return reply;
}

export function slidingPeekV2(commands: ModelCommands, keys: readonly string[], args: readonly string[]): number[] {
  const parsed = limitsOfCall(keys, args, 2);
  const nowMs = resolveNow(commands, args[0]);
  if (!parsed || nowMs === undefined) throw new ModelReplyError(INVALID_ARGUMENTS);
  const reply: number[] = [];
  readOverrides(commands, keys, parsed.overridesFrom, keys.length - 1, parsed.limits);
  decide(commands, reply, parsed.limits, nowMs, undefined, undefined, parsed.cost);
  return reply;
}

export function slidingAllowManyV2(
  commands: ModelCommands,
  keys: readonly string[],
  args: readonly string[],
): number[] {
  if (args.length !== 2 || keys.length < 1) throw new ModelReplyError(INVALID_ARGUMENTS);
  const maxSkewMs = whole(luaToNumber(args[0]), 0, MAX_TIME_MS);
  const list = decodeDecisions(args[1]);
  if (maxSkewMs === undefined || !list) throw new ModelReplyError(INVALID_ARGUMENTS);
  // Every decision is checked before the first one writes.
  const decisions: NonNullable<ReturnType<typeof batchDecision>>[] = [];
  let at = 0;
  let taken = 0;
  while (at < list.length) {
    const decision = batchDecision(keys, list, at, taken);
    if (!decision) throw new ModelReplyError(INVALID_ARGUMENTS);
    decisions.push(decision);
    at += 4 + 4 * decision.limits.length;
    taken = decision.last + 1;
  }
  if (taken !== keys.length) throw new ModelReplyError(INVALID_ARGUMENTS);
  // One EXISTS for the override keys of every decision.
  const overrideKeys = decisions.flatMap((d) => keys.slice(d.overridesFrom, d.last + 1));
  const overrides = overrideKeys.length > 0 && commands.exists(overrideKeys) > 0;
  const reply: number[] = [];
  for (const d of decisions) {
    const nowMs = d.now === '*' ? (resolveNow(commands, '*') as number) : d.now;
    if (overrides) readOverrides(commands, keys, d.overridesFrom, d.last, d.limits);
    decide(commands, reply, d.limits, nowMs, d.member, maxSkewMs, d.cost);
  }
  return reply;
}
