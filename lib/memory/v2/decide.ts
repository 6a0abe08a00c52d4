import { formatLuaInteger } from '../lua-values';
import type { ModelCommands } from '../model-commands';
import { ModelReplyError } from '../model-reply-error';
import { holds, readKey, record } from './limit-key';
import { BLOCK, EXEMPT } from './overrides';
import { appendLimit } from './replies';
import type { KeyState, Limit } from './types';

/* lib/redis/lua/rate_limit_v2/decide.lua: one request against its limits. */

/** The CLOCKSKEW error reply (`%d` truncates, as the C cast does). */
function clockSkewError(nowMs: number, newestMs: number, key: string, maxSkewMs: number): ModelReplyError {
  const [now, behind, tolerance] = [nowMs, newestMs - nowMs, maxSkewMs].map(formatLuaInteger);
  return new ModelReplyError(
    `CLOCKSKEW now_ms ${now} is ${behind} ms behind the newest entry of ${key} (tolerance ${tolerance} ms)`,
  );
}

/** Pushes the decision's reply onto `reply`. `maxSkewMs` undefined: a peek. @throws ModelReplyError CLOCKSKEW */
export function decide(
  commands: ModelCommands,
  reply: number[],
  limits: Limit[],
  nowMs: number,
  member: string | undefined,
  maxSkewMs: number | undefined,
  cost: number,
): void {
  const writes = maxSkewMs !== undefined;
  const holdsMember = (lim: Limit) => holds(commands, lim, member as string);
  let anchor: Limit | undefined;
  let blocked = false;
  for (const lim of limits) {
    if (lim.kind < EXEMPT) lim.state = readKey(commands, lim, nowMs, writes);
    if (!lim.shadow) {
      blocked ||= lim.kind === BLOCK;
      if (anchor === undefined && lim.kind < EXEMPT) anchor = lim;
    }
  }
  let allowed = 1;
  for (const lim of limits) {
    if (lim.kind < EXEMPT) {
      const state = lim.state as KeyState;
      // A retry carries its original now_ms, which newer entries may have overtaken since.
      if (writes && state.ahead !== undefined && state.ahead - nowMs > maxSkewMs && !holdsMember(anchor ?? lim)) {
        throw clockSkewError(nowMs, state.ahead, lim.key, maxSkewMs);
      }
      lim.room = state.count + cost <= lim.effective;
      if (writes && lim.shadow && !lim.room) lim.room = holdsMember(lim);
    } else {
      lim.room = lim.kind === EXEMPT;
    }
    if (!(lim.room || lim.shadow)) allowed = 0;
  }

  let retry = false;
  if (writes && allowed === 0 && anchor && !blocked && holdsMember(anchor)) {
    allowed = 1;
    retry = true;
  }
  if (writes && allowed === 1 && !retry) {
    // The anchor first: a retry with room is told by its key (ZADD adding nothing, or its ids).
    if (anchor && record(commands, anchor, nowMs, member as string, cost) === 0) retry = true;
    for (const lim of limits) {
      if (!retry && lim !== anchor && lim.room && lim.kind < EXEMPT)
        record(commands, lim, nowMs, member as string, cost);
    }
  }

  reply.push(allowed);
  for (const lim of limits) appendLimit(commands, reply, lim, allowed, nowMs, cost);
}
