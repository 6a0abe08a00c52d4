import { formatLuaInteger, luaToNumber } from './lua-values';
import { INVALID_ARGUMENTS, clockSkewError, decodeDecisions, isWhole, resolveNow } from './model-arguments';
import type { ModelCommands } from './model-commands';
import { ModelReplyError, WRONGTYPE } from './model-reply-error';
import { RECENT_IDS, RECENT_IDS_BYTES, holdsId, isValidMember, withRecentId } from './recent-ids';

/*
 * `rate_limit_v2.lua` in plain TypeScript, function by function (the same names, camel-cased); the
 * Lua's header is the contract. Read them side by side.
 */

const MAX_TIME_MS = 1e15;
const MAX_LIMIT = 1e15;
const MAX_SUB_WINDOWS = 1000;
const MAX_LOG_COST = 10_000;
const SCAN_STEP = 8;
const OVERRIDE_KINDS: Record<string, number> = { limit: 1, exempt: 2, block: 3 };
const EXEMPT = 2;
const BLOCK = 3;

/** A log key as read (the Lua's state without `precision`). */
interface LogState {
  log: true;
  count: number;
  ahead?: number;
  nowMs: number;
  cutoff: number;
}

/** A bucketed key as read (the Lua's `buckets`). */
interface BucketState {
  log?: undefined;
  count: number;
  oldest?: number;
  newest?: number;
  ids: string;
  precision: number;
  gone?: string[];
  /** Per sub-window when read whole (a Lua table: -0 and 0 are one key, as in a Map). */
  counts?: Map<number, number>;
  indexes?: number[];
  rewrite: boolean;
  ahead?: number;
  storedOldest?: number;
  storedNewest?: number;
}

type KeyState = LogState | BucketState;

/** One limit of a decision (the Lua's `new_limit`, keys and overrides assigned later). */
interface Limit {
  window: number;
  precision: number;
  shadow: boolean;
  hasOverride: boolean;
  kind: number;
  effective: number;
  key?: string;
  overrideKey?: string;
  state?: KeyState;
  room: boolean;
  retried?: boolean;
}

/** One decision of a batch (the Lua's `batch_decision`). */
interface BatchDecision {
  limits: Limit[];
  now: number | '*';
  member: string;
  cost: number;
  overridesFrom: number;
  last: number;
}

/** The Lua's `whole`: `n` when it is a whole number from `min` to `max`. */
function whole(n: number | undefined, min: number, max: number): number | undefined {
  return n !== undefined && n >= min && n <= max && isWhole(n) ? n : undefined;
}

/** The Lua's `number`: a decoded JSON value when it is a number. */
function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

function newLimit(
  windowArg: number | undefined,
  limitArg: number | undefined,
  precisionArg: number | undefined,
  flagsArg: number | undefined,
  cost: number,
): Limit | undefined {
  const window = whole(windowArg, 1, MAX_TIME_MS);
  const limit = whole(limitArg, cost, MAX_LIMIT);
  const precision = whole(precisionArg, 0, MAX_TIME_MS);
  const flags = whole(flagsArg, 0, 3);
  if (window === undefined || limit === undefined || precision === undefined || flags === undefined) return undefined;
  if (precision === 0) {
    if (cost > MAX_LOG_COST) return undefined;
  } else if (precision > window || window > precision * MAX_SUB_WINDOWS) {
    return undefined;
  }
  return {
    window,
    precision,
    shadow: flags % 2 === 1,
    hasOverride: flags >= 2,
    kind: 0,
    effective: limit,
    room: false,
  };
}

/** The Lua's `assign_keys` (indexes from 0 here): the index of the last key taken, or undefined for a repeated key. */
function assignKeys(keys: readonly string[], first: number, limits: Limit[]): number | undefined {
  let at = first + limits.length - 1;
  for (let i = 0; i < limits.length; i++) {
    const lim = limits[i];
    lim.key = keys[first + i];
    for (let j = 0; j < i; j++) if (limits[j].key === lim.key) return undefined;
    if (lim.hasOverride) {
      at += 1;
      lim.overrideKey = keys[at];
    }
  }
  return at;
}

const digits = formatLuaInteger;

function untilBucketLeaves(index: number, nowMs: number, window: number, precision: number): number {
  return (index + 1) * precision + window - 1 - nowMs;
}

function addCount(state: BucketState, index: number, count: number): void {
  const counts = state.counts;
  if (counts) {
    if (!counts.has(index)) {
      state.indexes?.push(index);
      counts.set(index, 0);
    }
    counts.set(index, (counts.get(index) as number) + count);
  }
  state.count += count;
  if (state.newest === undefined || index > state.newest) state.newest = index;
  if (state.oldest === undefined || index < state.oldest) state.oldest = index;
}

function emptyBuckets(precision: number): BucketState {
  return { count: 0, ids: '', precision, counts: new Map(), indexes: [], rewrite: false };
}

function countedPrecision(stored: number, window: number, precision: number): number {
  if (stored * MAX_SUB_WINDOWS >= window) return stored;
  return Math.max(precision, Math.ceil(window / MAX_SUB_WINDOWS));
}

function readBuckets(fields: readonly string[], nowMs: number, window: number, precision: number, stored: number) {
  const first = Math.floor((nowMs - window + 1) / stored);
  const state = emptyBuckets(precision);
  state.rewrite = stored !== precision;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i];
    if (name === 'ids') {
      state.ids = fields[i + 1];
    } else if (name !== 'p') {
      const index = luaToNumber(name);
      if (index === undefined) {
        // Not a field of ours: left alone.
      } else if (index < first) {
        (state.gone ??= []).push(name);
      } else if (state.rewrite) {
        const lastMs = Math.min((index + 1) * stored - 1, nowMs);
        addCount(state, Math.floor(lastMs / precision), luaToNumber(fields[i + 1]) as number);
      } else {
        addCount(state, index, luaToNumber(fields[i + 1]) as number);
      }
    }
  }
  return state;
}

function isWrongType(error: unknown): boolean {
  return error instanceof ModelReplyError && error.message === WRONGTYPE;
}

/** `rate_limit_v2.lua`: sliding_allow_v2, sliding_allow_many_v2 and sliding_peek_v2. */
export class RateLimitV2Model {
  constructor(private readonly commands: ModelCommands) {}

  slidingAllow(keys: readonly string[], args: readonly string[]): number[] {
    const parsed = limitsOfCall(keys, args, 4);
    const nowMs = resolveNow(this.commands, args[0]);
    const maxSkewMs = whole(luaToNumber(args[2]), 0, MAX_TIME_MS);
    if (!parsed || nowMs === undefined || maxSkewMs === undefined || !isValidMember(args[1])) {
      throw new ModelReplyError(INVALID_ARGUMENTS);
    }
    const wholeNow = whole(nowMs, 0, MAX_TIME_MS);
    if (wholeNow === undefined) throw new ModelReplyError(INVALID_ARGUMENTS);
    const reply: number[] = [];
    this.readOverrides(keys, parsed.overridesFrom, keys.length - 1, parsed.limits);
    this.decide(reply, 0, parsed.limits, wholeNow, args[1], maxSkewMs, parsed.cost);
    return reply;
  }

  slidingPeek(keys: readonly string[], args: readonly string[]): number[] {
    const parsed = limitsOfCall(keys, args, 2);
    const nowMs = resolveNow(this.commands, args[0]);
    const wholeNow = nowMs === undefined ? undefined : whole(nowMs, 0, MAX_TIME_MS);
    if (!parsed || wholeNow === undefined) throw new ModelReplyError(INVALID_ARGUMENTS);
    const reply: number[] = [];
    this.readOverrides(keys, parsed.overridesFrom, keys.length - 1, parsed.limits);
    this.decide(reply, 0, parsed.limits, wholeNow, undefined, undefined, parsed.cost);
    return reply;
  }

  slidingAllowMany(keys: readonly string[], args: readonly string[]): number[] {
    if (args.length !== 2 || keys.length < 1) throw new ModelReplyError(INVALID_ARGUMENTS);
    const maxSkewMs = whole(luaToNumber(args[0]), 0, MAX_TIME_MS);
    const list = decodeDecisions(args[1]);
    if (maxSkewMs === undefined || !list) throw new ModelReplyError(INVALID_ARGUMENTS);
    // Every decision is checked before the first one writes.
    const decisions: BatchDecision[] = [];
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
    const overrides = overrideKeys.length > 0 && this.commands.exists(overrideKeys) > 0;
    const reply: number[] = [];
    for (const d of decisions) {
      const nowMs = d.now === '*' ? (resolveNow(this.commands, '*') as number) : d.now;
      if (overrides) this.readOverrides(keys, d.overridesFrom, d.last, d.limits);
      this.decide(reply, reply.length, d.limits, nowMs, d.member, maxSkewMs, d.cost);
    }
    return reply;
  }

  // ---------------------------------------------------------------- overrides

  /** Override keys keys[from .. to]; sets each limit's kind and effective limit. @throws ModelReplyError */
  private readOverrides(keys: readonly string[], from: number, to: number, limits: Limit[]): void {
    if (to < from || this.commands.exists(keys.slice(from, to + 1)) === 0) return;
    for (const lim of limits) {
      if (!lim.hasOverride) continue;
      const [action, limitText] = this.commands.hmget(lim.overrideKey as string, ['action', 'limit']);
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

  private untilOverrideEnds(lim: Limit): number {
    const ttl = this.commands.pttl(lim.overrideKey as string);
    return ttl < 0 ? lim.window : ttl;
  }

  // ---------------------------------------------------------------- log

  private readLog(lim: Limit, nowMs: number, writes: boolean): LogState | undefined {
    const key = lim.key as string;
    const cutoff = nowMs - lim.window;
    let later: number;
    try {
      later = this.commands.countAfter(key, nowMs);
    } catch (error) {
      if (isWrongType(error)) return undefined;
      throw error;
    }
    const state: LogState = { log: true, count: 0, nowMs, cutoff };
    if (writes) {
      this.commands.zremrangebyscore(key, cutoff);
      state.count = this.commands.zcard(key);
    } else {
      state.count = this.commands.countAfter(key, cutoff);
    }
    if (later > 0) state.ahead = this.commands.newestScore(key);
    return state;
  }

  private recordLog(lim: Limit, state: LogState, nowMs: number, member: string, cost: number): number {
    const key = lim.key as string;
    if (this.commands.zaddNx(key, nowMs, member) === 0) return 0;
    for (let k = 2; k <= cost; k++) this.commands.zadd(key, nowMs, `${member}#${k}`);
    state.ahead ??= nowMs;
    this.commands.pexpire(key, Math.ceil(state.ahead + lim.window - nowMs));
    state.count += cost;
    return cost;
  }

  private logRetryAfter(lim: Limit, state: LogState, nowMs: number, cost: number, limit: number): number {
    const entry = this.commands.inWindow(lim.key as string, state.cutoff)[state.count + cost - limit - 1];
    return Math.ceil(entry + lim.window - nowMs);
  }

  // ---------------------------------------------------------------- bucketed

  /** Sub-windows from .. to: their names and counts (one HMGET in the Lua). */
  private subWindows(key: string, from: number, to: number): [string[], (string | undefined)[]] {
    const names: string[] = [];
    for (let index = from; index <= to; index++) names.push(digits(index));
    return [names, this.commands.hmget(key, names)];
  }

  private expireSubWindows(key: string, state: BucketState, first: number): void {
    let index = state.oldest as number;
    const lastGone = Math.min(first - 1, state.newest as number);
    if (index === lastGone) {
      const name = digits(index);
      const count = luaToNumber(this.commands.hmget(key, [name])[0]);
      if (count !== undefined) {
        state.count -= count;
        state.gone = [name];
      }
    } else {
      for (; index <= lastGone; index += SCAN_STEP) {
        const [names, counts] = this.subWindows(key, index, Math.min(index + SCAN_STEP - 1, lastGone));
        counts.forEach((text, k) => {
          if (text === undefined) return;
          state.count -= luaToNumber(text) as number;
          (state.gone ??= []).push(names[k]);
        });
      }
    }
    if (state.count > 0) {
      state.oldest = first;
    } else {
      state.count = 0;
      state.oldest = undefined;
      state.newest = undefined;
      state.ids = '';
    }
  }

  /** The Lua's `read_hash`: undefined when the key is a sorted set. */
  private readHash(key: string, nowMs: number, window: number, precision: number): BucketState | undefined {
    let meta: (string | undefined)[];
    try {
      meta = this.commands.hmget(key, ['t', 'o', 'n', 'p', 'ids']);
    } catch (error) {
      if (isWrongType(error)) return undefined;
      throw error;
    }
    const [total, oldest, newest, stored] = meta.slice(0, 4).map(luaToNumber);
    if (
      total === undefined &&
      oldest === undefined &&
      newest === undefined &&
      stored === undefined &&
      meta[4] === undefined
    ) {
      // Nothing of ours: a new key.
      return emptyBuckets(precision > 0 ? precision : Math.ceil(window / MAX_SUB_WINDOWS));
    }
    if (
      total !== undefined &&
      oldest !== undefined &&
      newest !== undefined &&
      stored !== undefined &&
      stored * MAX_SUB_WINDOWS >= window
    ) {
      const state: BucketState = {
        count: total,
        oldest,
        newest,
        ids: meta[4] ?? '',
        precision: stored,
        rewrite: false,
        storedOldest: oldest,
        storedNewest: newest,
      };
      const first = Math.floor((nowMs - window + 1) / stored);
      if (oldest < first) this.expireSubWindows(key, state, first);
      return state;
    }
    const fields = this.commands.hgetall(key);
    const own = stored ?? (precision > 0 ? precision : 1);
    return readBuckets(fields, nowMs, window, countedPrecision(own, window, precision), own);
  }

  private writeBuckets(key: string, state: BucketState, nowMs: number, window: number): void {
    this.commands.del(key);
    const counts = state.counts as Map<number, number>;
    for (const index of [...(state.indexes as number[])].sort((a, b) => a - b)) {
      this.commands.hset(key, digits(index), digits(counts.get(index) as number));
    }
    this.commands.hset(key, 'ids', state.ids);
    this.commands.hset(key, 'p', digits(state.precision));
    this.commands.hset(key, 't', digits(state.count));
    this.commands.hset(key, 'o', digits(state.oldest as number));
    this.commands.hset(key, 'n', digits(state.newest as number));
    this.commands.pexpire(key, untilBucketLeaves(state.newest as number, nowMs, window, state.precision));
  }

  private logAsBuckets(lim: Limit, log: LogState): BucketState {
    const entries = this.commands.entriesAfter(lim.key as string, log.cutoff);
    const state = emptyBuckets(lim.precision);
    const ids: string[] = [];
    let length = -1;
    for (let i = entries.length - 1; i >= 0; i--) {
      const [id, score] = entries[i];
      addCount(state, Math.floor(score / lim.precision), 1);
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

  private recordBuckets(
    key: string,
    state: BucketState,
    nowMs: number,
    window: number,
    member: string,
    cost: number,
    limit: number,
  ) {
    const index = Math.floor(nowMs / state.precision);
    const newestBefore = state.newest;
    const name = digits(index);
    let countText: string | undefined;
    if (state.counts === undefined && newestBefore !== undefined && index <= newestBefore) {
      this.commands.hincrby(key, name, cost);
      addCount(state, index, cost);
    } else {
      addCount(state, index, cost);
      countText = digits(state.counts ? (state.counts.get(index) as number) : cost);
    }
    state.ids = withRecentId(state.ids, member);
    if (state.rewrite) return this.writeBuckets(key, state, nowMs, window);
    // The Lua's `oldest_held`: the bound `o` written when a request fills the key is the oldest held.
    if (state.counts === undefined && state.count >= limit && (state.oldest as number) < index) {
      state.oldest = this.oldestHeld(key, state.oldest as number, index);
    }
    if (state.gone) this.commands.hdel(key, state.gone);
    if (countText !== undefined) this.commands.hset(key, name, countText);
    this.commands.hset(key, 'ids', state.ids);
    this.commands.hset(key, 't', digits(state.count));
    if (state.storedOldest !== state.oldest) this.commands.hset(key, 'o', digits(state.oldest as number));
    if (state.storedNewest !== state.newest) this.commands.hset(key, 'n', digits(state.newest as number));
    if (state.storedNewest === undefined) this.commands.hset(key, 'p', digits(state.precision));
    // The key's TTL lasts until its newest sub-window leaves already: only a newer one moves it.
    if (newestBefore === undefined || index > newestBefore) {
      this.commands.pexpire(key, untilBucketLeaves(index, nowMs, window, state.precision));
    }
  }

  /** The oldest sub-window held from `from`, or `last` (held) when none before it is. */
  private oldestHeld(key: string, from: number, last: number): number {
    for (let index = from; index < last; index += SCAN_STEP) {
      const [, counts] = this.subWindows(key, index, Math.min(index + SCAN_STEP, last) - 1);
      const held = counts.findIndex((count) => count !== undefined);
      if (held >= 0) return index + held;
    }
    return last;
  }

  private leavingIndex(key: string, state: BucketState, limit: number, cost: number): number {
    let left = state.count;
    if (state.counts) {
      for (const index of [...(state.indexes as number[])].sort((a, b) => a - b)) {
        left -= state.counts.get(index) as number;
        if (left + cost <= limit) return index;
      }
      return state.newest as number;
    }
    const newest = state.newest as number;
    for (let index = state.oldest as number; index <= newest; index += SCAN_STEP) {
      const [, counts] = this.subWindows(key, index, Math.min(index + SCAN_STEP - 1, newest));
      for (let k = 0; k < counts.length; k++) {
        if (counts[k] === undefined) continue;
        left -= luaToNumber(counts[k]) as number;
        if (left + cost <= limit) return index + k;
      }
    }
    return newest;
  }

  // ---------------------------------------------------------------- a limit

  private readKey(lim: Limit, nowMs: number, writes: boolean): KeyState {
    if (lim.precision === 0) {
      const log = this.readLog(lim, nowMs, writes);
      if (log) return log;
    }
    const state = this.readHash(lim.key as string, nowMs, lim.window, lim.precision);
    if (state === undefined) return this.readLog(lim, nowMs, writes) as LogState;
    if (state.newest !== undefined && state.newest * state.precision > nowMs) {
      state.ahead = state.newest * state.precision;
    }
    return state;
  }

  private holds(lim: Limit, member: string): boolean {
    if (lim.retried === undefined) {
      const state = lim.state as KeyState;
      lim.retried = state.log
        ? this.commands.zscore(lim.key as string, member) !== undefined
        : holdsId(state.ids, member);
    }
    return lim.retried;
  }

  private record(lim: Limit, nowMs: number, member: string, cost: number): number {
    const state = lim.state as KeyState;
    if (state.log && lim.precision === 0) return this.recordLog(lim, state, nowMs, member, cost);
    if (this.holds(lim, member)) return 0;
    // A log read by a bucketed limit becomes a hash of the limit's precision.
    const buckets = state.log ? this.logAsBuckets(lim, state) : state;
    lim.state = buckets;
    this.recordBuckets(lim.key as string, buckets, nowMs, lim.window, member, cost, lim.effective);
    return cost;
  }

  /** A log's newest time: read already when after now_ms, else its last entry's (the window holds some). */
  private newestOf(lim: Limit, state: LogState): number {
    return state.ahead ?? (this.commands.newestScore(lim.key as string) as number);
  }

  /** The Lua's `append_limit`: seven integers from reply[at]. */
  private appendLimit(reply: number[], at: number, lim: Limit, allowed: number, nowMs: number, cost: number): void {
    let values: number[];
    if (lim.kind === EXEMPT) {
      values = [1, 0, lim.effective, 0, 0];
    } else if (lim.kind === BLOCK) {
      values = [0, 0, 0, this.untilOverrideEnds(lim), 0];
    } else {
      const state = lim.state as KeyState;
      const limit = lim.effective;
      const count = state.count;
      let retryAfterMs = 0;
      let resetMs = 0;
      if (!lim.room && (lim.shadow || allowed === 0)) {
        if (cost > limit) retryAfterMs = this.untilOverrideEnds(lim);
        else if (!state.log) {
          const index = this.leavingIndex(lim.key as string, state, limit, cost);
          retryAfterMs = untilBucketLeaves(index, nowMs, lim.window, state.precision);
        } else retryAfterMs = this.logRetryAfter(lim, state, nowMs, cost, limit);
      }
      if (count > 0) {
        resetMs = state.log
          ? Math.ceil(this.newestOf(lim, state) + lim.window - nowMs)
          : untilBucketLeaves(state.newest as number, nowMs, lim.window, state.precision);
      }
      values = [lim.room ? 1 : 0, count, Math.max(limit - count, 0), retryAfterMs, resetMs];
    }
    values.push(lim.effective, lim.kind);
    for (let k = 0; k < 7; k++) reply[at + k] = values[k];
  }

  // ---------------------------------------------------------------- decisions

  /** One request against its limits; its reply from reply[at]. `maxSkewMs` undefined: a peek. @throws CLOCKSKEW */
  private decide(
    reply: number[],
    at: number,
    limits: Limit[],
    nowMs: number,
    member: string | undefined,
    maxSkewMs: number | undefined,
    cost: number,
  ): void {
    const writes = maxSkewMs !== undefined;
    let anchor: Limit | undefined;
    let blocked = false;
    for (const lim of limits) {
      if (lim.kind < EXEMPT) lim.state = this.readKey(lim, nowMs, writes);
      if (!lim.shadow) {
        blocked ||= lim.kind === BLOCK;
        if (anchor === undefined && lim.kind < EXEMPT) anchor = lim;
      }
    }
    let allowed = 1;
    for (const lim of limits) {
      if (lim.kind < EXEMPT) {
        const ahead = (lim.state as KeyState).ahead;
        // A retry carries its original now_ms, which newer entries may have overtaken since.
        if (
          writes &&
          ahead !== undefined &&
          ahead - nowMs > maxSkewMs &&
          !this.holds(anchor ?? lim, member as string)
        ) {
          throw clockSkewError(nowMs, ahead, lim.key as string, maxSkewMs);
        }
        lim.room = (lim.state as KeyState).count + cost <= lim.effective;
        if (writes && lim.shadow && !lim.room) lim.room = this.holds(lim, member as string);
      } else {
        lim.room = lim.kind === EXEMPT;
      }
      if (!(lim.room || lim.shadow)) allowed = 0;
    }

    let retry = false;
    if (writes && allowed === 0 && anchor && !blocked && this.holds(anchor, member as string)) {
      allowed = 1;
      retry = true;
    }
    if (writes && allowed === 1 && !retry) {
      // The anchor first: a retry with room is told by its key (ZADD adding nothing, or its ids).
      if (anchor && this.record(anchor, nowMs, member as string, cost) === 0) retry = true;
      for (const lim of limits) {
        if (!retry && lim !== anchor && lim.room && lim.kind < EXEMPT) this.record(lim, nowMs, member as string, cost);
      }
    }

    reply[at] = allowed;
    limits.forEach((lim, i) => this.appendLimit(reply, at + 1 + 7 * i, lim, allowed, nowMs, cost));
  }
}

/**
 * The Lua's `limits_of_call` (the quadruples from args[first], the cost just before; indexes from
 * 0 here), or undefined when the arguments are invalid.
 */
function limitsOfCall(
  keys: readonly string[],
  args: readonly string[],
  first: number,
): { limits: Limit[]; cost: number; overridesFrom: number } | undefined {
  const n = (args.length - first) / 4;
  const cost = whole(luaToNumber(args[first - 1]), 1, MAX_TIME_MS);
  if (n < 1 || !Number.isInteger(n) || cost === undefined) return undefined;
  const limits: Limit[] = [];
  for (let i = 0; i < n; i++) {
    const at = first + 4 * i;
    const [window, limit, precision, flags] = args.slice(at, at + 4).map(luaToNumber);
    const lim = newLimit(window, limit, precision, flags, cost);
    if (!lim) return undefined;
    limits.push(lim);
  }
  if (assignKeys(keys, 0, limits) !== keys.length - 1) return undefined;
  return { limits, cost, overridesFrom: n };
}

/** The Lua's `batch_decision` (indexes from 0 here), or undefined when it is invalid. */
function batchDecision(keys: readonly string[], list: readonly unknown[], at: number, taken: number) {
  const [now, member] = [list[at], list[at + 1]];
  const cost = whole(numberOf(list[at + 2]), 1, MAX_TIME_MS);
  const n = whole(numberOf(list[at + 3]), 1, 1000);
  if ((now !== '*' && whole(numberOf(now), 0, MAX_TIME_MS) === undefined) || !isValidMember(member)) return undefined;
  if (cost === undefined || n === undefined) return undefined;
  const limits: Limit[] = [];
  for (let i = 1; i <= n; i++) {
    const q = at + 4 * i;
    const lim = newLimit(numberOf(list[q]), numberOf(list[q + 1]), numberOf(list[q + 2]), numberOf(list[q + 3]), cost);
    if (!lim) return undefined;
    limits.push(lim);
  }
  const last = assignKeys(keys, taken, limits);
  if (last === undefined || last > keys.length - 1) return undefined;
  const decision: BatchDecision = { limits, now: now as number | '*', member, cost, overridesFrom: taken + n, last };
  return decision;
}
