import { luaToNumber } from '../lua-values';
import type { ModelCommands } from '../model-commands';
import { digits, unlessWrongType } from './arguments';
import { MAX_SUB_WINDOWS } from './limits';
import type { BucketState } from './types';

/* lib/redis/lua/rate_limit_v2/bucketed_read.lua: a bucketed key read for a decision. */

export const SCAN_STEP = 8;

export function untilBucketLeaves(index: number, nowMs: number, windowMs: number, precisionMs: number): number {
  return (index + 1) * precisionMs + windowMs - 1 - nowMs;
}

export function addCount(state: BucketState, index: number, count: number): void {
  const counts = state.counts;
  if (counts) {
    if (!counts.has(index)) state.indexes?.push(index);
    counts.set(index, (counts.get(index) ?? 0) + count);
  }
  state.count += count;
  if (state.newest === undefined || index > state.newest) state.newest = index;
  if (state.oldest === undefined || index < state.oldest) state.oldest = index;
}

export function emptyBuckets(precisionMs: number): BucketState {
  return { count: 0, ids: '', precisionMs, counts: new Map(), indexes: [], rewrite: false };
}

function countedPrecision(storedMs: number, windowMs: number, precisionMs: number): number {
  if (storedMs * MAX_SUB_WINDOWS >= windowMs) return storedMs;
  return Math.max(precisionMs, Math.ceil(windowMs / MAX_SUB_WINDOWS));
}

function readBuckets(
  fields: readonly string[],
  nowMs: number,
  windowMs: number,
  precisionMs: number,
  storedMs: number,
) {
  const first = Math.floor((nowMs - windowMs + 1) / storedMs);
  const state = emptyBuckets(precisionMs);
  state.rewrite = storedMs !== precisionMs;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i];
    // Not a count of ours (p, ids, a field of someone else's): left alone.
    const index = name === 'p' ? undefined : luaToNumber(name);
    const count = luaToNumber(fields[i + 1]) as number;
    if (name === 'ids') {
      state.ids = fields[i + 1];
    } else if (index === undefined) {
      continue;
    } else if (index < first) {
      (state.gone ??= []).push(name);
    } else if (state.rewrite) {
      addCount(state, Math.floor(Math.min((index + 1) * storedMs - 1, nowMs) / precisionMs), count);
    } else {
      addCount(state, index, count);
    }
  }
  return state;
}

/** `scan_held`: the first held sub-window from `from` to `to`, oldest first, for which `visit` is true. */
export function scanHeld(
  commands: ModelCommands,
  key: string,
  from: number,
  to: number,
  step: number,
  visit: (count: number, name: string) => boolean,
): number | undefined {
  for (let index = from; index <= to; step = SCAN_STEP) {
    const names: string[] = [];
    for (let i = index; i <= Math.min(index + step - 1, to); i++) names.push(digits(i));
    const counts = commands.hmget(key, names);
    for (let k = 0; k < counts.length; k++) {
      if (counts[k] !== undefined && visit(luaToNumber(counts[k]) as number, names[k])) return index + k;
    }
    index += names.length;
  }
  return undefined;
}

function expireSubWindows(commands: ModelCommands, key: string, state: BucketState, first: number): void {
  const index = state.oldest as number;
  const lastGone = Math.min(first - 1, state.newest as number);
  if (index === lastGone) {
    const name = digits(index);
    const count = luaToNumber(commands.hmget(key, [name])[0]);
    if (count !== undefined) {
      state.count -= count;
      state.gone = [name];
    }
  } else {
    scanHeld(commands, key, index, lastGone, SCAN_STEP, (count, name) => {
      state.count -= count;
      (state.gone ??= []).push(name);
      return false;
    });
  }
  if (state.count > 0) {
    state.oldest = first;
  } else {
    state.count = 0;
    state.oldest = state.newest = undefined;
    state.ids = '';
  }
}

/** `read_hash`: undefined when the key is a sorted set. */
export function readHash(commands: ModelCommands, key: string, nowMs: number, windowMs: number, precisionMs: number) {
  const meta = unlessWrongType(() => commands.hmget(key, ['t', 'o', 'n', 'p', 'ids']));
  if (meta === undefined) return undefined;
  const [total, oldest, newest, stored] = meta.slice(0, 4).map(luaToNumber);
  if ([total, oldest, newest, stored, meta[4]].every((value) => value === undefined)) {
    // Nothing of ours: a new key.
    return emptyBuckets(precisionMs > 0 ? precisionMs : Math.ceil(windowMs / MAX_SUB_WINDOWS));
  }
  const totals = total !== undefined && oldest !== undefined && newest !== undefined && stored !== undefined;
  if (totals && stored * MAX_SUB_WINDOWS >= windowMs) {
    const state: BucketState = {
      count: total,
      oldest,
      newest,
      ids: meta[4] ?? '',
      precisionMs: stored,
      rewrite: false,
    };
    [state.storedOldest, state.storedNewest] = [oldest, newest];
    const first = Math.floor((nowMs - windowMs + 1) / stored);
    if (oldest < first) expireSubWindows(commands, key, state, first);
    return state;
  }
  const own = stored ?? (precisionMs > 0 ? precisionMs : 1);
  return readBuckets(commands.hgetall(key), nowMs, windowMs, countedPrecision(own, windowMs, precisionMs), own);
}
