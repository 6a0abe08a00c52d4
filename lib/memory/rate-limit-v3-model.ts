import { formatLuaFixed0, luaMax, luaToNumber, luaWords } from './lua-values';
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
import { ModelReplyError } from './model-reply-error';

/** The Lua's MAX_SUB_WINDOWS: at most this many sub-windows per bucketed window. */
const MAX_SUB_WINDOWS = 1000;
/** The Lua's RECENT_IDS: request ids a bucketed key remembers, to recognise a retry. */
const RECENT_IDS = 8;

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
  /** Indexes of the sub-windows counted, in HGETALL order, then those recorded. */
  indexes: number[];
  /** Cost per sub-window index (a Lua table: -0 and 0 are one key, as in a Map). */
  counts: Map<number, number>;
  /** The highest index counted. */
  newest: number | undefined;
  /** The last request ids, newest first, space-separated. */
  ids: string;
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

    const counts: number[] = [];
    const states: BucketState[] = [];
    let allowed = 1;
    for (let i = 0; i < n; i++) {
      const { windowMs, limit, precisionMs } = limits[i];
      if (precisionMs === 0) {
        counts[i] = this.readLog(keys[i], nowMs, windowMs, false).count;
      } else {
        states[i] = this.readBuckets(keys[i], nowMs, windowMs, precisionMs, false);
        counts[i] = states[i].total;
      }
      if (counts[i] + cost > limit) allowed = 0;
    }

    const reply = [allowed];
    for (let i = 0; i < n; i++) {
      const { windowMs, limit, precisionMs } = limits[i];
      if (precisionMs === 0) {
        const newest = this.commands.newestScore(keys[i]);
        reply.push(...this.logState(allowed, keys[i], nowMs, windowMs, limit, cost, counts[i], newest));
      } else {
        reply.push(...bucketState(allowed, states[i], nowMs, windowMs, precisionMs, limit, cost));
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
    // Per limit: the log's count and newest score after now_ms, or the bucketed key's state.
    const counts: number[] = [];
    const newest: (number | undefined)[] = [];
    const states: BucketState[] = [];
    let retried: boolean | undefined;
    const isRetry = (): boolean => {
      if (retried === undefined) {
        retried =
          limits[0].precisionMs === 0
            ? this.commands.zscore(keys[0], member) !== undefined
            : bucketRecorded(states[0], member);
      }
      return retried;
    };

    let allowed = 1;
    for (let i = 0; i < n; i++) {
      const { windowMs, limit, precisionMs } = limits[i];
      if (precisionMs === 0) {
        ({ count: counts[i], newest: newest[i] } = this.readLog(keys[i], nowMs, windowMs, true));
      } else {
        states[i] = this.readBuckets(keys[i], nowMs, windowMs, precisionMs, true);
        counts[i] = states[i].total;
        const newestIndex = states[i].newest;
        if (newestIndex !== undefined) {
          newest[i] = newestIndex * precisionMs;
          if ((newest[i] as number) <= nowMs) newest[i] = undefined;
        }
      }
      // A retry carries its original now_ms, which newer entries may have overtaken since.
      const ahead = newest[i];
      if (ahead !== undefined && ahead - nowMs > maxSkewMs && !isRetry()) {
        throw clockSkewError(nowMs, ahead, keys[i], maxSkewMs);
      }
      if (counts[i] + cost > limit) allowed = 0;
    }
    if (allowed === 0 && isRetry()) allowed = 1;

    // A bucketed first key tells a retry by its ids; a log first key by ZADD adding nothing.
    if (allowed === 1 && !(limits[0].precisionMs !== 0 && isRetry())) {
      for (let i = 0; i < n; i++) {
        const { windowMs, precisionMs } = limits[i];
        if (precisionMs === 0) {
          const added = this.recordLog(keys[i], nowMs, windowMs, member, cost, newest[i]);
          if (i === 0 && added === 0) break;
          counts[i] = counts[i] + added;
          newest[i] = newest[i] ?? nowMs;
        } else {
          this.recordBucket(keys[i], states[i], nowMs, windowMs, precisionMs, member, cost);
          counts[i] = states[i].total;
        }
      }
    }

    reply.push(allowed);
    for (let i = 0; i < n; i++) {
      const { windowMs, limit, precisionMs } = limits[i];
      if (precisionMs === 0) {
        reply.push(...this.logState(allowed, keys[i], nowMs, windowMs, limit, cost, counts[i], newest[i]));
      } else {
        reply.push(...bucketState(allowed, states[i], nowMs, windowMs, precisionMs, limit, cost));
      }
    }
  }

  // ---------------------------------------------------------------- log

  /** The newest score when an entry lies after now_ms (another caller's clock runs ahead), else nil. */
  private newestAfter(key: string, nowMs: number): number | undefined {
    if (this.commands.countAfter(key, nowMs) === 0) return undefined;
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
  ): { count: number; newest: number | undefined } {
    const newest = this.newestAfter(key, nowMs);
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
   * A bucketed key read for a decision: the cost counted, the sub-windows still counted, the newest
   * and the ids. With `writes`, the sub-windows that left the window are deleted.
   */
  private readBuckets(key: string, nowMs: number, windowMs: number, precisionMs: number, writes: boolean): BucketState {
    const first = Math.floor((nowMs - windowMs + 1) / precisionMs);
    const fields = this.commands.hgetall(key);
    const state: BucketState = { total: 0, indexes: [], counts: new Map(), newest: undefined, ids: '' };
    const expired: string[] = [];
    for (let i = 0; i < fields.length; i += 2) {
      const name = fields[i];
      if (name === 'ids') {
        state.ids = fields[i + 1];
      } else {
        const index = luaToNumber(name);
        if (index === undefined) {
          // Not a field of ours: ignored, and left alone.
        } else if (index < first) {
          expired.push(name);
        } else {
          const count = luaToNumber(fields[i + 1]) as number;
          state.total = state.total + count;
          state.indexes.push(index);
          state.counts.set(index, count);
          if (state.newest === undefined || index > state.newest) state.newest = index;
        }
      }
    }
    if (writes && expired.length > 0) this.commands.hdel(key, expired);
    return state;
  }

  /** Records a request of `cost` in a bucketed key (not a retry: the caller checked). */
  private recordBucket(
    key: string,
    state: BucketState,
    nowMs: number,
    windowMs: number,
    precisionMs: number,
    member: string,
    cost: number,
  ): void {
    const index = Math.floor(nowMs / precisionMs);
    const field = formatLuaFixed0(index);
    this.commands.hincrby(key, field, cost);
    if (!state.counts.has(index)) {
      state.indexes.push(index);
      state.counts.set(index, 0);
    }
    state.counts.set(index, (state.counts.get(index) as number) + cost);
    state.total = state.total + cost;
    if (state.newest === undefined || index > state.newest) state.newest = index;
    // The newest ids first; the oldest beyond RECENT_IDS fall off.
    const ids = [member];
    for (const id of luaWords(state.ids)) {
      if (ids.length >= RECENT_IDS) break;
      ids.push(id);
    }
    state.ids = ids.join(' ');
    this.commands.hset(key, 'ids', state.ids);
    this.commands.pexpire(key, untilBucketLeaves(state.newest, nowMs, windowMs, precisionMs));
  }
}

/** count, remaining, retry_after_ms and reset_ms of a bucketed limit. */
function bucketState(
  allowed: number,
  state: BucketState,
  nowMs: number,
  windowMs: number,
  precisionMs: number,
  limit: number,
  cost: number,
): number[] {
  const count = state.total;
  let retryAfterMs = 0;
  if (allowed === 0 && count + cost > limit) {
    // The oldest sub-windows leave first; the cost fits once enough of them have left.
    let left = count;
    for (const index of [...state.indexes].sort((a, b) => a - b)) {
      left = left - (state.counts.get(index) as number);
      if (left + cost <= limit) {
        retryAfterMs = untilBucketLeaves(index, nowMs, windowMs, precisionMs);
        break;
      }
    }
  }
  let resetMs = 0;
  if (count > 0) resetMs = untilBucketLeaves(state.newest as number, nowMs, windowMs, precisionMs);
  return [count, luaMax(limit - count, 0), retryAfterMs, resetMs];
}

/** ms from now_ms until sub-window `index` stops counting. */
function untilBucketLeaves(index: number, nowMs: number, windowMs: number, precisionMs: number): number {
  return (index + 1) * precisionMs + windowMs - 1 - nowMs;
}

function bucketRecorded(state: BucketState, member: string): boolean {
  return ` ${state.ids} `.includes(` ${member} `);
}

/** The Lua's `is_valid_limit`: whether (window_ms, limit, precision_ms) is a valid limit for a request of `cost`. */
function isValidLimit(
  windowMs: number | undefined,
  limit: number | undefined,
  precisionMs: number | undefined,
  cost: number,
): boolean {
  if (windowMs === undefined || limit === undefined || precisionMs === undefined) return false;
  if (!(windowMs > 0 && windowMs <= MAX_WINDOW_MS && limit > 0 && isWhole(limit) && cost <= limit)) return false;
  if (precisionMs === 0) return true;
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

function isValidMember(member: unknown): member is string {
  return typeof member === 'string' && member !== '' && !member.includes(' ');
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
