/* lib/redis/lua/rate_limit_v2/recent_ids.lua: a bucketed key's field `ids`, counted in bytes as Lua strings are. */

export const RECENT_IDS = 8;
export const RECENT_IDS_BYTES = 64;

/** Whether `member` (no whitespace) is one of the ids. */
export function idsHold(ids: string, member: string): boolean {
  return ` ${ids} `.includes(` ${member} `);
}

/** The ids with `member` in front; the ids kept behind it are a prefix of the old list (the Lua's string.find). */
export function withId(ids: string, member: string): string {
  const old = Buffer.from(ids);
  const budget = RECENT_IDS_BYTES - Buffer.byteLength(member) - 1;
  let cut = 0;
  let from = 0;
  for (let kept = 1; kept < RECENT_IDS; kept++) {
    const space = old.indexOf(' ', from);
    const stop = space === -1 ? old.length : space;
    if (stop <= from || stop > budget) break;
    cut = stop;
    if (space === -1) break;
    from = space + 1;
  }
  return cut > 0 ? `${member} ${old.subarray(0, cut).toString()}` : member;
}
