/*
 * The request ids a bounded-memory key remembers (its field `ids`), as rate_limit_v2.lua
 * keeps them: newest first, space-separated, at most RECENT_IDS and within
 * RECENT_IDS_BYTES (Redis' compact listpack encoding takes values of up to 64 bytes).
 */

export const RECENT_IDS = 8;
export const RECENT_IDS_BYTES = 64;

/**
 * The ids with `member` in front; the oldest fall off past RECENT_IDS or RECENT_IDS_BYTES. The ids
 * kept behind the new one are a prefix of the old list, found by its spaces (the Lua's string.find),
 * counted in bytes as Lua strings are.
 */
export function withRecentId(ids: string, member: string): string {
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

/** Whether `member` (no whitespace) is one of the ids. */
export function holdsId(ids: string, member: string): boolean {
  return ` ${ids} `.includes(` ${member} `);
}

/**
 * The Lua's `is_valid_member`: not empty, no whitespace (C isspace: ids are kept space-separated)
 * and no '#' (a log's cost entries are <member>#2 … <member>#c).
 */
export function isValidMember(member: unknown): member is string {
  return typeof member === 'string' && member !== '' && !/[ \t\n\v\f\r#]/.test(member);
}
