import { formatLuaNumber, luaMax, luaToNumber } from './lua-values';
import {
  INVALID_ARGUMENTS,
  MAX_TIME_MS,
  MAX_WINDOW_MS,
  clockSkewError,
  decodeDecisions,
  hasRepeatedKey,
  isNumber,
  isTime,
  isWhole,
  resolveNow,
} from './model-arguments';
import type { ModelCommands } from './model-commands';
import { ModelReplyError, WRONGTYPE } from './model-reply-error';
import { RECENT_IDS, RECENT_IDS_BYTES, holdsId, isValidMember, withRecentId } from './recent-ids';

/** The Lua's MAX_SUB_WINDOWS: at most this many sub-windows per bucketed window. */
const MAX_SUB_WINDOWS = 1000;
/** The Lua's MAX_LIMIT: limits (so counts) stay below 1e17, which Redis would receive as `1e+17`. */
const MAX_LIMIT = 1e15;
const MAX_LOG_COST = 10_000;
/** The Lua's RETRY_SCAN_STEP: sub-windows read per HMGET when a fast-path state looks for its retry time. */
const RETRY_SCAN_STEP = 8;

/** One (window_ms, limit, precision_ms) triple; precision 0 (or -0) is the log. */
interface Limit {
  windowMs: number;
  limit: number;
  precisionMs: number;
}

/** The Lua's state of a bucketed key (`read_buckets`). */
interface BucketState {
  /** Cost counted. */
  total: number;
  /** Indexes of the sub-windows counted, in HGETALL order, then those recorded; absent on the fast path. */
  indexes?: number[];
  /** Cost per sub-window index (a Lua table: -0 and 0 are one key, as in a Map); absent on the fast path. */
  counts?: Map<number, number>;
  /** The highest index counted. */
  newest: number | undefined;
  /** A bound below every index counted (the lowest, or the fast path's `first`). */
  oldest?: number;
  /** The key's o and n as read by the fast path; absent for a key read whole. */
  stored?: { o: number; n: number };
  /** Whether sub-windows were deleted and the key's t, o and n are not written yet. */
  unsaved?: boolean;
  /** The last request ids, newest first, space-separated. */
  ids: string;
  /** The sub-window length the key is counted with. */
  precision: number;
}

/** How a limit's key is counted (`read_limit`): 0 for a log, else the precision, and what was read. */
interface LimitReading {
  kind: number;
  count: number;
  newest: number | undefined;
  state?: BucketState;
}

/**
 * `rate_limit_v3.lua` in plain TypeScript: sliding_allow_v3, sliding_allow_many_v3 and
 * sliding_peek_v3, following the Lua function by function (same names, camel-cased) and line by
 * line. Read them side by side; the Lua's header is the contract.
 */
export class RateLimitV3Model {
  constructor(private readonly commands: ModelCommands) {}

  slidingAllow(keys: readonly string[], args: readonly string[]): number[] {
    const n = keys.length;
    if (n < 1 || args.length !== 4 + 3 * n || (n > 1 && hasRepeatedKey(keys))) {
      throw new ModelReplyError(INVALID_ARGUMENTS);
    }
    const nowMs = resolveNow(this.commands, args[0]);
    const member = args[1];
    const maxSkewMs = luaToNumber(args[2]);
    const cost = luaToNumber(args[3]);
    if (nowMs === undefined || !isValidMember(member) || !isTime(maxSkewMs) || !isValidCost(cost)) {
      throw new ModelReplyError(INVALID_ARGUMENTS);
    }
    const limits = parseLimits(args, 4, n, cost);
    if (!limits) throw new ModelReplyError(INVALID_ARGUMENTS);
    const reply: number[] = [];
    this.decide(reply, keys, nowMs, member, maxSkewMs, cost, limits);
    return reply;
  }

  /** Checks every decision first (nothing is written unless all are valid), then decides them in order. */
  slidingAllowMany(keys: readonly string[], args: readonly string[]): number[] {
    const maxSkewMs = luaToNumber(args[0]);
    const list = args.length === 2 ? decodeDecisions(args[1]) : undefined;
    const keyCount = keys.length;
    if (keyCount < 1 || !isTime(maxSkewMs) || !list) throw new ModelReplyError(INVALID_ARGUMENTS);
    let at = 0;
    let taken = 0;
    while (at < list.length) {
      const n = decisionKeyCount(keys, list, at, taken);
      if (n === undefined) throw new ModelReplyError(INVALID_ARGUMENTS);
      at += 4 + 3 * n;
      taken += n;
    }
    if (taken !== keyCount) throw new ModelReplyError(INVALID_ARGUMENTS);

    // Checked above: every field has its type and range.
    const reply: number[] = [];
    at = 0;
    taken = 0;
    while (at < list.length) {
      const [listNow, member, cost, n] = list.slice(at, at + 4) as [number | '*', string, number, number];
      const nowMs = listNow === '*' ? (resolveNow(this.commands, '*') as number) : listNow;
      const limits: Limit[] = [];
      for (let i = 0; i < n; i++) {
        const [windowMs, limit, precisionMs] = list.slice(at + 4 + 3 * i, at + 7 + 3 * i) as number[];
        limits.push({ windowMs, limit, precisionMs });
      }
      // A CLOCKSKEW of one decision is the reply of the call; the ones before it stay recorded.
      this.decide(reply, keys.slice(taken, taken + n), nowMs, member, maxSkewMs, cost, limits);
      at += 4 + 3 * n;
      taken += n;
    }
    return reply;
  }

  slidingPeek(keys: readonly string[], args: readonly string[]): number[] {
    const n = keys.length;
    if (n < 1 || args.length !== 2 + 3 * n || (n > 1 && hasRepeatedKey(keys))) {
      throw new ModelReplyError(INVALID_ARGUMENTS);
    }
    const nowMs = resolveNow(this.commands, args[0]);
    const cost = luaToNumber(args[1]);
    if (nowMs === undefined || !isValidCost(cost)) throw new ModelReplyError(INVALID_ARGUMENTS);
    const limits = parseLimits(args, 2, n, cost);
    if (!limits) throw new ModelReplyError(INVALID_ARGUMENTS);

    const readings: LimitReading[] = [];
    let allowed = 1;
    for (let i = 0; i < n; i++) {
      const { windowMs, limit, precisionMs } = limits[i];
      readings[i] = this.readLimit(keys[i], nowMs, windowMs, precisionMs, false);
      if (readings[i].count + cost > limit) allowed = 0;
    }

    const reply = [allowed];
    for (let i = 0; i < n; i++) {
      const { windowMs, limit } = limits[i];
      const { kind, count, state } = readings[i];
      if (kind === 0) {
        // No newest time: logState reads it when the window holds anything, as the Lua's peek does.
        reply.push(...this.logState(allowed, keys[i], nowMs, windowMs, limit, cost, count, undefined));
      } else {
        reply.push(...this.bucketState(allowed, keys[i], state as BucketState, nowMs, windowMs, limit, cost));
      }
    }
    return reply;
  }

  // ---------------------------------------------------------------- decisions

  /** One request against n limits, all or none recorded; appends its reply. @throws ModelReplyError CLOCKSKEW */
  private decide(
    reply: number[],
    keys: readonly string[],
    nowMs: number,
    member: string,
    maxSkewMs: number,
    cost: number,
    limits: readonly Limit[],
  ): void {
    const n = keys.length;
    // Per limit: the precision its key is counted with (0: a log), its count and newest time after
    // now_ms, and a bucketed key's state.
    const kinds: number[] = [];
    const counts: number[] = [];
    const newest: (number | undefined)[] = [];
    const states: (BucketState | undefined)[] = [];
    let retried: boolean | undefined;
    const isRetry = (): boolean => {
      if (retried === undefined) {
        retried =
          kinds[0] === 0
            ? this.commands.zscore(keys[0], member) !== undefined
            : bucketRecorded(states[0] as BucketState, member);
      }
      return retried;
    };

    let allowed = 1;
    for (let i = 0; i < n; i++) {
      const { windowMs, limit, precisionMs } = limits[i];
      ({
        kind: kinds[i],
        count: counts[i],
        newest: newest[i],
        state: states[i],
      } = this.readLimit(keys[i], nowMs, windowMs, precisionMs, true));
      // A retry carries its original now_ms, which newer entries may have overtaken since.
      const ahead = newest[i];
      if (ahead !== undefined && ahead - nowMs > maxSkewMs && !isRetry()) {
        // Nothing is recorded, but sub-windows that left may have been deleted: keep the keys whole.
        for (let j = 0; j <= i; j++) if (kinds[j] !== 0) this.saveMeta(keys[j], states[j] as BucketState);
        throw clockSkewError(nowMs, ahead, keys[i], maxSkewMs);
      }
      if (counts[i] + cost > limit) allowed = 0;
    }
    if (allowed === 0 && isRetry()) allowed = 1;

    // A bucketed first key tells a retry by its ids; a log first key by ZADD adding nothing.
    if (allowed === 1 && !(kinds[0] !== 0 && isRetry())) {
      for (let i = 0; i < n; i++) {
        const { windowMs } = limits[i];
        if (kinds[i] === 0) {
          const added = this.recordLog(keys[i], nowMs, windowMs, member, cost, newest[i]);
          if (i === 0 && added === 0) break;
          counts[i] = counts[i] + added;
          newest[i] = newest[i] ?? nowMs;
        } else {
          const state = states[i] as BucketState;
          this.recordBucket(keys[i], state, nowMs, windowMs, member, cost);
          counts[i] = state.total;
        }
      }
    }
    for (let i = 0; i < n; i++) if (kinds[i] !== 0) this.saveMeta(keys[i], states[i] as BucketState);

    reply.push(allowed);
    for (let i = 0; i < n; i++) {
      const { windowMs, limit } = limits[i];
      if (kinds[i] === 0) {
        reply.push(...this.logState(allowed, keys[i], nowMs, windowMs, limit, cost, counts[i], newest[i]));
      } else {
        reply.push(...this.bucketState(allowed, keys[i], states[i] as BucketState, nowMs, windowMs, limit, cost));
      }
    }
  }

  /**
   * The Lua's `read_limit`: a limit's key counted by what it holds (a log limit on a hash counts it as
   * a bucketed window of its own precision; a bucketed limit on a sorted set turns it into counts, or
   * counts it as a log when nothing may be written).
   */
  private readLimit(key: string, nowMs: number, windowMs: number, precisionMs: number, writes: boolean): LimitReading {
    if (precisionMs === 0) {
      const log = this.readLog(key, nowMs, windowMs, writes);
      if (log) return { kind: 0, count: log.count, newest: log.newest };
      const fields = this.commands.hgetall(key);
      // Its own precision, unless finer than this window allows: then re-bucketed coarser.
      const precision = Math.max(storedPrecision(fields, 1), Math.ceil(windowMs / MAX_SUB_WINDOWS));
      const state = this.readBuckets(key, nowMs, windowMs, precision, writes, fields);
      return { kind: precision, count: state.total, newest: newestStart(state, nowMs), state };
    }
    // The fast path: while the key's oldest sub-window still counts, its total is the count.
    const meta = this.hmgetUnlessLog(key, ['t', 'o', 'n', 'p', 'ids']);
    if (meta) {
      const [total, oldest, newestIndex] = [luaToNumber(meta[0]), luaToNumber(meta[1]), luaToNumber(meta[2])];
      if (
        total !== undefined &&
        oldest !== undefined &&
        newestIndex !== undefined &&
        luaToNumber(meta[3]) === precisionMs
      ) {
        const state: BucketState = {
          total,
          oldest,
          newest: newestIndex,
          ids: meta[4] ?? '',
          precision: precisionMs,
          stored: { o: oldest, n: newestIndex },
        };
        const first = Math.floor((nowMs - windowMs + 1) / precisionMs);
        if (oldest < first) this.expireScanned(key, state, first, writes);
        return { kind: precisionMs, count: state.total, newest: newestStart(state, nowMs), state };
      }
    }
    let fields: string[] | undefined;
    try {
      fields = this.commands.hgetall(key);
    } catch (error) {
      if (!(error instanceof ModelReplyError && error.message === WRONGTYPE)) throw error;
    }
    let state: BucketState;
    if (fields === undefined) {
      if (!writes) {
        const log = this.readLog(key, nowMs, windowMs, false) as { count: number; newest: number | undefined };
        return { kind: 0, count: log.count, newest: log.newest };
      }
      state = this.readLogAsBuckets(key, nowMs, windowMs, precisionMs, writes);
    } else {
      state = this.readBuckets(key, nowMs, windowMs, precisionMs, writes, fields);
    }
    return { kind: precisionMs, count: state.total, newest: newestStart(state, nowMs), state };
  }

  /**
   * The Lua's `expire_scanned`: a fast-path state whose oldest sub-windows left the window; reads and
   * deletes just those, finds the new oldest, and writes the total and oldest back (or deletes an
   * emptied key). Read one name at a time here: the Lua reads a lone leaving sub-window by HGET and
   * several by HMGET, RETRY_SCAN_STEP at a time; the values read are the same.
   */
  private expireScanned(key: string, state: BucketState, first: number, writes: boolean): void {
    const gone: string[] = [];
    const lastGone = Math.min(first - 1, state.newest as number);
    for (let index = state.oldest as number; index <= lastGone; index++) {
      const name = formatLuaInt(index);
      const count = luaToNumber(this.commands.hmget(key, [name])[0]);
      if (count !== undefined) {
        state.total = state.total - count;
        gone.push(name);
      }
    }
    if (state.total > 0) {
      state.oldest = first;
    } else {
      state.total = 0;
      state.oldest = undefined;
      state.newest = undefined;
      state.ids = '';
    }
    if (writes && gone.length > 0) {
      this.commands.hdel(key, gone);
      state.unsaved = true;
    }
  }

  /** HMGET, or undefined where the Lua's pcall sees WRONGTYPE (the key is a log). */
  private hmgetUnlessLog(key: string, fields: readonly string[]): (string | undefined)[] | undefined {
    try {
      return this.commands.hmget(key, fields);
    } catch (error) {
      if (error instanceof ModelReplyError && error.message === WRONGTYPE) return undefined;
      throw error;
    }
  }

  /** The Lua's `bucket_state`: count, remaining, retry_after_ms and reset_ms of a bucketed limit. */
  private bucketState(
    allowed: number,
    key: string,
    state: BucketState,
    nowMs: number,
    windowMs: number,
    limit: number,
    cost: number,
  ): number[] {
    const precisionMs = state.precision;
    const count = state.total;
    let retryAfterMs = 0;
    if (allowed === 0 && count + cost > limit) {
      const index =
        state.counts === undefined
          ? this.leavingIndexScanned(key, state, limit, cost)
          : leavingIndex(state, limit, cost);
      retryAfterMs = untilBucketLeaves(index, nowMs, windowMs, precisionMs);
    }
    let resetMs = 0;
    if (count > 0) resetMs = untilBucketLeaves(state.newest as number, nowMs, windowMs, precisionMs);
    return [count, luaMax(limit - count, 0), retryAfterMs, resetMs];
  }

  /**
   * The Lua's `leaving_index_scanned`: for a state read by the fast path (no counts; every
   * sub-window from its oldest to its newest still counts), the sub-window whose leaving lets `cost`
   * fit, reading them oldest first, RETRY_SCAN_STEP per HMGET.
   */
  private leavingIndexScanned(key: string, state: BucketState, limit: number, cost: number): number {
    const newest = state.newest as number;
    let left = state.total;
    let index = state.oldest as number;
    while (index <= newest) {
      const last = Math.min(index + RETRY_SCAN_STEP - 1, newest);
      const names: string[] = [];
      for (let at = index; at <= last; at++) names.push(formatLuaInt(at));
      const values = this.commands.hmget(key, names);
      for (let k = 0; k < values.length; k++) {
        const count = luaToNumber(values[k]);
        if (count !== undefined) {
          left = left - count;
          if (left + cost <= limit) return index + k;
        }
      }
      index = last + 1;
    }
    return newest;
  }

  // ---------------------------------------------------------------- log

  /**
   * The newest score when an entry lies after now_ms (another caller's clock runs ahead), else
   * undefined; false when the key is a hash (the Lua's pcall seeing WRONGTYPE).
   */
  private newestAfter(key: string, nowMs: number): number | undefined | false {
    let later: number;
    try {
      later = this.commands.countAfter(key, nowMs);
    } catch (error) {
      if (error instanceof ModelReplyError && error.message === WRONGTYPE) return false;
      throw error;
    }
    if (later === 0) return undefined;
    return this.commands.newestScore(key);
  }

  /** ms until the in-window entry at position `offset` (0 = oldest) leaves the window. */
  private untilEntryLeaves(key: string, nowMs: number, windowMs: number, offset: number): number {
    const entry = this.commands.inWindow(key, nowMs - windowMs)[offset];
    return Math.ceil(entry + windowMs - nowMs);
  }

  /** Adds the cost - 1 entries that follow a request's first one (id#2 .. id#cost). */
  private addExtraEntries(key: string, nowMs: number, member: string, cost: number): void {
    for (let k = 2; k <= cost; k++) this.commands.zadd(key, nowMs, `${member}#${k}`);
  }

  /** A log key read for a decision: drops what left the window (with `writes`); count and newest after now_ms. */
  private readLog(
    key: string,
    nowMs: number,
    windowMs: number,
    writes: boolean,
  ): { count: number; newest: number | undefined } | undefined {
    const newest = this.newestAfter(key, nowMs);
    if (newest === false) return undefined;
    if (writes) {
      this.commands.zremrangebyscore(key, nowMs - windowMs);
      return { count: this.commands.zcard(key), newest };
    }
    return { count: this.commands.countAfter(key, nowMs - windowMs), newest };
  }

  /** Records a request of `cost` in a log key; the cost added (0 for a retry already recorded). */
  private recordLog(
    key: string,
    nowMs: number,
    windowMs: number,
    member: string,
    cost: number,
    newest: number | undefined,
  ): number {
    if (this.commands.zaddNx(key, nowMs, member) === 0) return 0;
    this.addExtraEntries(key, nowMs, member, cost);
    this.commands.pexpire(key, Math.ceil((newest ?? nowMs) + windowMs - nowMs));
    return cost;
  }

  /** count, remaining, retry_after_ms and reset_ms of a log limit. */
  private logState(
    allowed: number,
    key: string,
    nowMs: number,
    windowMs: number,
    limit: number,
    cost: number,
    count: number,
    newest: number | undefined,
  ): number[] {
    let retryAfterMs = 0;
    if (allowed === 0 && count + cost > limit) {
      // count + cost - limit entries must leave before the cost fits.
      retryAfterMs = this.untilEntryLeaves(key, nowMs, windowMs, count + cost - limit - 1);
    }
    let resetMs = 0;
    if (count > 0) {
      const newestScore = newest ?? this.commands.newestScore(key);
      resetMs = Math.ceil((newestScore as number) + windowMs - nowMs);
    }
    return [count, luaMax(limit - count, 0), retryAfterMs, resetMs];
  }

  // ---------------------------------------------------------------- bucketed

  /**
   * The Lua's `read_buckets`: a bucketed key read from its HGETALL `fields`. With `writes`, the
   * sub-windows that left the window are deleted; a key of another precision is re-bucketed (each
   * count moved to the new sub-window of its old one's last millisecond, or now) and rewritten.
   */
  private readBuckets(
    key: string,
    nowMs: number,
    windowMs: number,
    precisionMs: number,
    writes: boolean,
    fields: readonly string[],
  ): BucketState {
    const precision = storedPrecision(fields, precisionMs);
    const first = Math.floor((nowMs - windowMs + 1) / precision);
    const state = emptyState(precisionMs);
    const expired: string[] = [];
    const moved = precision !== precisionMs;
    for (let i = 0; i < fields.length; i += 2) {
      const name = fields[i];
      if (name === 'ids') {
        state.ids = fields[i + 1];
      } else if (name !== 'p') {
        const index = luaToNumber(name);
        if (index === undefined) {
          // Not a field of ours: ignored, and left alone.
        } else if (index < first) {
          expired.push(name);
        } else if (moved) {
          const lastMs = Math.min((index + 1) * precision - 1, nowMs);
          addCount(state, Math.floor(lastMs / precisionMs), luaToNumber(fields[i + 1]) as number);
        } else {
          addCount(state, index, luaToNumber(fields[i + 1]) as number);
        }
      }
    }
    if (writes && moved) {
      this.writeBuckets(key, state, nowMs, windowMs);
    } else if (writes && expired.length > 0) {
      this.commands.hdel(key, expired);
      state.unsaved = true;
    }
    return state;
  }

  /** The Lua's `read_log_as_buckets`: a log key's entries in the window as counts per sub-window. */
  private readLogAsBuckets(
    key: string,
    nowMs: number,
    windowMs: number,
    precisionMs: number,
    writes: boolean,
  ): BucketState {
    const entries = this.commands.entriesAfter(key, nowMs - windowMs);
    const state = emptyState(precisionMs);
    const ids: string[] = [];
    let length = -1;
    for (let i = entries.length - 1; i >= 0; i--) {
      const [member, score] = entries[i];
      addCount(state, Math.floor(score / precisionMs), 1);
      const bytes = Buffer.byteLength(member);
      if (!member.includes('#') && ids.length < RECENT_IDS && length + 1 + bytes <= RECENT_IDS_BYTES) {
        ids.push(member);
        length += 1 + bytes;
      }
    }
    state.ids = ids.join(' ');
    if (writes) this.writeBuckets(key, state, nowMs, windowMs);
    return state;
  }

  /** The Lua's `write_buckets`: the key rewritten whole, with its TTL. */
  private writeBuckets(key: string, state: BucketState, nowMs: number, windowMs: number): void {
    this.commands.del(key);
    if (state.newest === undefined) return;
    for (const index of state.indexes ?? []) {
      this.commands.hset(key, formatLuaInt(index), formatLuaNumber(state.counts?.get(index) as number));
    }
    this.commands.hset(key, 'ids', state.ids);
    this.commands.hset(key, 'p', formatLuaNumber(state.precision));
    this.writeMeta(key, state);
    this.commands.pexpire(key, untilBucketLeaves(state.newest, nowMs, windowMs, state.precision));
  }

  /** Records a request of `cost` in a bucketed key (not a retry: the caller checked). */
  private recordBucket(
    key: string,
    state: BucketState,
    nowMs: number,
    windowMs: number,
    member: string,
    cost: number,
  ): void {
    const index = Math.floor(nowMs / state.precision);
    const name = formatLuaInt(index);
    // The sub-window's new count goes in the HSET with the rest when it is known (a table of counts,
    // or a sub-window newer than every one the key holds); otherwise an HINCRBY.
    if (state.counts === undefined && state.newest !== undefined && index <= state.newest) {
      this.commands.hincrby(key, name, cost);
      addCount(state, index, cost);
    } else {
      addCount(state, index, cost);
      this.commands.hset(
        key,
        name,
        formatLuaInt(state.counts !== undefined ? (state.counts.get(index) as number) : cost),
      );
    }
    // The newest ids first; the oldest fall off past RECENT_IDS or RECENT_IDS_BYTES.
    state.ids = withRecentId(state.ids, member);
    // The total, the bound (o) and the newest (n), written as they change (read_limit's fast path).
    this.commands.hset(key, 'ids', state.ids);
    this.commands.hset(key, 't', formatLuaInt(state.total));
    const stored = state.stored;
    if (stored === undefined || stored.o !== state.oldest)
      this.commands.hset(key, 'o', formatLuaInt(state.oldest as number));
    if (stored === undefined || stored.n !== state.newest)
      this.commands.hset(key, 'n', formatLuaInt(state.newest as number));
    if (stored === undefined) this.commands.hset(key, 'p', formatLuaNumber(state.precision));
    state.unsaved = false;
    this.commands.pexpire(key, untilBucketLeaves(state.newest as number, nowMs, windowMs, state.precision));
  }

  /** The Lua's `save_meta`: the total, bound and newest of a key a decision changed but did not record in. */
  private saveMeta(key: string, state: BucketState): void {
    if (!state.unsaved) return;
    if (state.newest === undefined) {
      this.commands.del(key);
    } else {
      this.commands.hset(key, 't', formatLuaNumber(state.total));
      this.commands.hset(key, 'o', formatLuaNumber(state.oldest as number));
      this.commands.hset(key, 'n', formatLuaNumber(state.newest));
    }
    state.unsaved = false;
  }

  /** The fields t, o and n: the total and the oldest and newest sub-windows. */
  private writeMeta(key: string, state: BucketState): void {
    this.commands.hset(key, 't', formatLuaNumber(state.total));
    this.commands.hset(key, 'o', formatLuaNumber(state.oldest as number));
    this.commands.hset(key, 'n', formatLuaNumber(state.newest as number));
  }
}

/** The Lua's `leaving_index`: the same from a state's counts; the oldest sub-windows leave first. */
function leavingIndex(state: BucketState, limit: number, cost: number): number {
  const counts = state.counts as Map<number, number>;
  let left = state.total;
  for (const index of [...(state.indexes as number[])].sort((a, b) => a - b)) {
    left = left - (counts.get(index) as number);
    if (left + cost <= limit) return index;
  }
  return state.newest as number;
}

/**
 * Lua's `string.format('%d', n)`, which the Lua uses for sub-window names and the integers a record
 * writes (cheaper than the `%.17g` Redis applies to a Lua number; the same digits, but -0 is "0").
 */
function formatLuaInt(n: number): string {
  return Math.trunc(n).toFixed(0);
}

/** ms from now_ms until sub-window `index` stops counting. */
function untilBucketLeaves(index: number, nowMs: number, windowMs: number, precisionMs: number): number {
  return Math.ceil((index + 1) * precisionMs + windowMs - 1 - nowMs);
}

function emptyState(precision: number): BucketState {
  return { total: 0, indexes: [], counts: new Map(), newest: undefined, ids: '', precision };
}

/** The Lua's `add_count`. */
function addCount(state: BucketState, index: number, count: number): void {
  if (state.counts !== undefined && state.indexes !== undefined) {
    if (!state.counts.has(index)) {
      state.indexes.push(index);
      state.counts.set(index, 0);
    }
    state.counts.set(index, (state.counts.get(index) as number) + count);
  }
  state.total = state.total + count;
  if (state.newest === undefined || index > state.newest) state.newest = index;
  if (state.oldest === undefined || index < state.oldest) state.oldest = index;
}

/** The Lua's `stored_precision`: the hash's field "p", or `defaultMs`. */
function storedPrecision(fields: readonly string[], defaultMs: number): number {
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i] === 'p') return luaToNumber(fields[i + 1]) ?? defaultMs;
  }
  return defaultMs;
}

/** The Lua's `newest_start`: the newest sub-window's start when it lies after now_ms. */
function newestStart(state: BucketState, nowMs: number): number | undefined {
  if (state.newest !== undefined && state.newest * state.precision > nowMs) return state.newest * state.precision;
  return undefined;
}

function bucketRecorded(state: BucketState, member: string): boolean {
  return holdsId(state.ids, member);
}

/** The Lua's `is_valid_limit`: whether (window_ms, limit, precision_ms) is a valid limit for a request of `cost`. */
function isValidLimit(
  windowMs: number | undefined,
  limit: number | undefined,
  precisionMs: number | undefined,
  cost: number,
): boolean {
  if (windowMs === undefined || limit === undefined || precisionMs === undefined) return false;
  if (!(
    windowMs > 0 &&
    windowMs <= MAX_WINDOW_MS &&
    limit > 0 &&
    limit <= MAX_LIMIT &&
    isWhole(limit) &&
    cost <= limit
  )) {
    return false;
  }
  // The Lua's MAX_LOG_COST: a log writes one entry per unit of cost.
  if (precisionMs === 0) return cost <= MAX_LOG_COST;
  return (
    precisionMs >= 1 &&
    isWhole(precisionMs) &&
    isWhole(windowMs) &&
    precisionMs <= windowMs &&
    windowMs / precisionMs <= MAX_SUB_WINDOWS
  );
}

function isValidCost(cost: number | undefined): cost is number {
  return cost !== undefined && cost >= 1 && isWhole(cost) && cost <= MAX_TIME_MS;
}

/** The Lua's `parse_limits`: n triples from args[first]; undefined when one is invalid. */
function parseLimits(args: readonly string[], first: number, n: number, cost: number): Limit[] | undefined {
  const limits: Limit[] = [];
  for (let i = 0; i < n; i++) {
    const at = first + 3 * i;
    const [windowMs, limit, precisionMs] = [
      luaToNumber(args[at]),
      luaToNumber(args[at + 1]),
      luaToNumber(args[at + 2]),
    ];
    if (!isValidLimit(windowMs, limit, precisionMs, cost)) return undefined;
    limits.push({ windowMs: windowMs as number, limit: limit as number, precisionMs: precisionMs as number });
  }
  return limits;
}

/**
 * The Lua's `decision_key_count`: the key count of the decision at list[at] of sliding_allow_many_v3,
 * whose keys follow the first `taken`; undefined when it is invalid. JSON values are typed: a number
 * must be a number, not a numeric string.
 */
function decisionKeyCount(
  keys: readonly string[],
  list: readonly unknown[],
  at: number,
  taken: number,
): number | undefined {
  const [nowMs, member, cost, n] = [list[at], list[at + 1], list[at + 2], list[at + 3]];
  // Lua indexes from 1: its `at + 3 + 3 * n <= size` is this `at + 3 + 3 * n < size`.
  if (!(isNumber(n) && n >= 1 && isWhole(n) && taken + n <= keys.length && at + 3 + 3 * n < list.length)) {
    return undefined;
  }
  if (nowMs !== '*' && !(isNumber(nowMs) && isTime(nowMs))) return undefined;
  if (!isValidMember(member) || !isNumber(cost) || !isValidCost(cost)) return undefined;
  for (let i = at + 4; i <= at + 1 + 3 * n; i += 3) {
    const [windowMs, limit, precisionMs] = [list[i], list[i + 1], list[i + 2]];
    if (!isNumber(windowMs) || !isNumber(limit) || !isNumber(precisionMs)) return undefined;
    if (!isValidLimit(windowMs, limit, precisionMs, cost)) return undefined;
  }
  if (n > 1 && hasRepeatedKey(keys.slice(taken, taken + n))) return undefined;
  return n;
}
