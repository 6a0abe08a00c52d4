import { luaToNumber } from '../lua-values';
import type { ModelCommands } from '../model-commands';
import { ModelReplyError } from '../model-reply-error';
import { MAX_LIMIT, whole } from './arguments';
import type { Limit } from './types';

/* lib/redis/lua/rate_limit_v2/overrides.lua: a limit's `kind` is 0 none, 1 limit, 2 exempt, 3 block. */

const OVERRIDE_KINDS: Record<string, number> = { limit: 1, exempt: 2, block: 3 };
export const EXEMPT = 2;
export const BLOCK = 3;

/** Override keys keys[from .. to]; sets each limit's kind and effective limit. @throws ModelReplyError */
export function readOverrides(
  commands: ModelCommands,
  keys: readonly string[],
  from: number,
  to: number,
  limits: Limit[],
) {
  if (to < from || commands.exists(keys.slice(from, to + 1)) === 0) return;
  for (const lim of limits) {
    if (!lim.hasOverride) continue;
    const [action, limitText] = commands.hmget(lim.overrideKey as string, ['action', 'limit']);
    if (action === undefined) continue;
    const kind = Object.hasOwn(OVERRIDE_KINDS, action) ? OVERRIDE_KINDS[action] : undefined;
    const value = whole(luaToNumber(limitText), 0, MAX_LIMIT);
    if (kind === undefined || (kind === 1 && value === undefined)) {
      throw new ModelReplyError(`ERR invalid override at ${lim.overrideKey}`);
    }
    lim.kind = kind;
    if (kind === 1) lim.effective = value as number;
    else if (kind === BLOCK) lim.effective = 0;
  }
}

export function untilOverrideEnds(commands: ModelCommands, lim: Limit): number {
  const ttl = commands.pttl(lim.overrideKey as string);
  return ttl < 0 ? lim.windowMs : ttl;
}
