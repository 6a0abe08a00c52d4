import type { ModelCommands } from '../model-commands';
import { digits } from './arguments';
import { SCAN_STEP, addCount, emptyBuckets, scanHeld, untilBucketLeaves } from './bucketed-read';
import { RECENT_IDS, RECENT_IDS_BYTES, withId } from './recent-ids';
import type { BucketState, Limit, LogState } from './types';

/* lib/redis/lua/rate_limit_v2/bucketed_write.lua: a request recorded in a bucketed key. */

function writeBuckets(commands: ModelCommands, key: string, state: BucketState, nowMs: number, windowMs: number) {
  commands.del(key);
  const counts = state.counts as Map<number, number>;
  for (const index of [...(state.indexes as number[])].sort((a, b) => a - b)) {
    commands.hset(key, digits(index), digits(counts.get(index) as number));
  }
  const [oldest, newest] = [state.oldest as number, state.newest as number];
  const fields = {
    ids: state.ids,
    p: digits(state.precisionMs),
    t: digits(state.count),
    o: digits(oldest),
    n: digits(newest),
  };
  for (const [field, value] of Object.entries(fields)) commands.hset(key, field, value);
  commands.pexpire(key, untilBucketLeaves(state.newest as number, nowMs, windowMs, state.precisionMs));
}

/** Request ids are the entries without a #n suffix, counted in bytes as Lua strings are. */
export function logAsBuckets(commands: ModelCommands, lim: Limit, log: LogState): BucketState {
  const entries = commands.entriesAfter(lim.key, log.cutoffMs);
  const state = emptyBuckets(lim.precisionMs);
  const ids: string[] = [];
  let length = -1;
  for (const [id, score] of entries.reverse()) {
    addCount(state, Math.floor(score / lim.precisionMs), 1);
    const bytes = Buffer.byteLength(id);
    if (!id.includes('#') && ids.length < RECENT_IDS && length + 1 + bytes <= RECENT_IDS_BYTES) {
      ids.push(id);
      length += 1 + bytes;
    }
  }
  state.ids = ids.join(' ');
  state.rewrite = true;
  return state;
}

/** The oldest sub-window held from `from`, `last` (held) when none before it is. */
function oldestHeld(commands: ModelCommands, key: string, from: number, last: number): number {
  return scanHeld(commands, key, from, last - 1, SCAN_STEP, () => true) ?? last;
}

/** A request that is not a retry (the caller checked the ids). */
export function recordBuckets(
  commands: ModelCommands,
  key: string,
  state: BucketState,
  nowMs: number,
  windowMs: number,
  member: string,
  cost: number,
  limit: number,
): void {
  const index = Math.floor(nowMs / state.precisionMs);
  const newestBefore = state.newest;
  const name = digits(index);
  let countText: string | undefined;
  if (state.counts === undefined && newestBefore !== undefined && index <= newestBefore) {
    commands.hincrby(key, name, cost);
    addCount(state, index, cost);
  } else {
    addCount(state, index, cost);
    countText = digits(state.counts ? (state.counts.get(index) as number) : cost);
  }
  state.ids = withId(state.ids, member);
  if (state.rewrite) return writeBuckets(commands, key, state, nowMs, windowMs);
  if (state.counts === undefined && state.count >= limit && (state.oldest as number) < index) {
    state.oldest = oldestHeld(commands, key, state.oldest as number, index);
  }
  if (state.gone) commands.hdel(key, state.gone);
  if (countText !== undefined) commands.hset(key, name, countText);
  commands.hset(key, 'ids', state.ids);
  commands.hset(key, 't', digits(state.count));
  if (state.storedOldest !== state.oldest) commands.hset(key, 'o', digits(state.oldest as number));
  if (state.storedNewest !== state.newest) commands.hset(key, 'n', digits(state.newest as number));
  if (state.storedNewest === undefined) commands.hset(key, 'p', digits(state.precisionMs));
  // The key's TTL lasts until its newest sub-window leaves already: only a newer one moves it.
  if (newestBefore === undefined || index > newestBefore) {
    commands.pexpire(key, untilBucketLeaves(index, nowMs, windowMs, state.precisionMs));
  }
}
