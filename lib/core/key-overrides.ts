import { UnexpectedReplyError } from './errors/unexpected-reply.error';
import { MAX_BUCKETED_LIMIT, MAX_WINDOW_MS } from './limit-rule';
import { whyNoOverrideKey } from './override-keys';
import { describeValue, isWholeNumberIn } from './value-checks';

/**
 * What an override does to one limited key (read by `sliding_allow_v2` in the same call):
 * - `limit`: the key's limit is `limit` instead of the rule's (0 refuses everything);
 * - `exempt`: the key is not limited: admitted, and its window neither read nor written;
 * - `block`: refused, with a Retry-After of the override's remaining time (the window without one).
 */
export type KeyOverride = { action: 'limit'; limit: number } | { action: 'exempt' } | { action: 'block' };

/** The kinds of override, as `KeyOverride['action']`. */
export type OverrideAction = KeyOverride['action'];

/** Options of {@link OverrideStore.set}. */
export interface OverrideSetOptions {
  /** Expires this many ms from now (a whole number from 1 to one year). */
  ttlMs?: number;
  /** Expires at this epoch ms (in the future, at most a year ahead); not with `ttlMs`. Neither: never expires. */
  expiresAt?: number;
  /** Why, for the operators who read it later (at most 500 characters). */
  note?: string;
  /** Who set it (at most 500 characters). */
  by?: string;
}

/** An override as stored. */
export interface StoredOverride {
  /** The limited key, without the key prefix. */
  key: string;
  /** What it does. */
  override: KeyOverride;
  /** Why, as given to `set`. */
  note?: string;
  /** Who set it, as given to `set`. */
  by?: string;
  /** When it was set, epoch ms (the setter's clock). */
  createdAt: number;
  /** Ms until it expires; undefined when it never does. */
  expiresInMs?: number;
}

/** Options of {@link OverrideStore.list}. */
export interface OverrideListOptions {
  /** Limited keys (without the key prefix) in Redis' glob syntax; default `*`. */
  match?: string;
  /** At most this many overrides (default 100, at most 10,000). */
  count?: number;
}

/** Per-key overrides (`RedisOverridesStore`, `MemoryOverridesStore`); keys without the key prefix. */
export interface OverrideStore {
  /**
   * Sets (replaces) the override of `key`.
   * @throws RateLimitConfigError for an invalid override or options, or a key that cannot carry one
   */
  set(key: string, override: KeyOverride, options?: OverrideSetOptions): Promise<StoredOverride>;
  /** The override of `key`, or undefined. @throws UnexpectedReplyError for a malformed override hash */
  get(key: string): Promise<StoredOverride | undefined>;
  /** Deletes the override of `key`; whether there was one. */
  delete(key: string): Promise<boolean>;
  /** The overrides of keys matching `match`, sorted by key (a bounded SCAN of every master). */
  list(options?: OverrideListOptions): Promise<StoredOverride[]>;
}

/** Longest `note` or `by`. */
export const MAX_OVERRIDE_TEXT = 500;
/** Default and largest `count` of a list. */
export const DEFAULT_OVERRIDE_LIST_COUNT = 100;
export const MAX_OVERRIDE_LIST_COUNT = 10_000;

const ACTIONS: readonly string[] = ['limit', 'exempt', 'block'];

/** Every problem of a `set` call (empty when valid), each naming its argument. */
export function describeOverrideProblems(
  key: unknown,
  fullKey: string,
  override: unknown,
  options: OverrideSetOptions | undefined,
  nowMs: number,
): string[] {
  const problems: string[] = [];
  if (typeof key !== 'string' || key.length === 0) {
    problems.push(`key must be a non-empty string, got ${describeValue(key)}`);
  } else {
    const why = whyNoOverrideKey(fullKey);
    if (why) problems.push(`key cannot carry overrides: ${why}`);
  }
  const { action, limit } = (typeof override === 'object' && override !== null ? override : {}) as Record<
    string,
    unknown
  >;
  if (typeof action !== 'string' || !ACTIONS.includes(action)) {
    problems.push(`override.action must be one of ${ACTIONS.join(', ')}, got ${describeValue(action)}`);
  } else if (action === 'limit' && !isWholeNumberIn(limit, 0, MAX_BUCKETED_LIMIT)) {
    problems.push(`override.limit must be a whole number from 0 to ${MAX_BUCKETED_LIMIT}, got ${describeValue(limit)}`);
  }
  const { ttlMs, expiresAt, note, by } = options ?? {};
  if (ttlMs !== undefined && expiresAt !== undefined) problems.push('give ttlMs or expiresAt, not both');
  if (ttlMs !== undefined && !isWholeNumberIn(ttlMs, 1, MAX_WINDOW_MS)) {
    problems.push(`ttlMs must be a whole number of ms from 1 to ${MAX_WINDOW_MS}, got ${describeValue(ttlMs)}`);
  }
  if (expiresAt !== undefined && !isWholeNumberIn(expiresAt, nowMs + 1, nowMs + MAX_WINDOW_MS)) {
    problems.push(`expiresAt must be epoch ms in the future, at most a year ahead, got ${describeValue(expiresAt)}`);
  }
  for (const [name, text] of [
    ['note', note],
    ['by', by],
  ] as const) {
    if (text !== undefined && !(typeof text === 'string' && text.length <= MAX_OVERRIDE_TEXT)) {
      problems.push(`${name} must be a string of at most ${MAX_OVERRIDE_TEXT} characters, got ${describeValue(text)}`);
    }
  }
  return problems;
}

/** Problems of list options. */
export function describeListProblems(options: OverrideListOptions | undefined): string[] {
  const { match, count } = options ?? {};
  const problems: string[] = [];
  if (match !== undefined && !(typeof match === 'string' && match.length > 0)) {
    problems.push(`match must be a non-empty glob pattern, got ${describeValue(match)}`);
  }
  if (count !== undefined && !isWholeNumberIn(count, 1, MAX_OVERRIDE_LIST_COUNT)) {
    problems.push(`count must be a whole number from 1 to ${MAX_OVERRIDE_LIST_COUNT}, got ${describeValue(count)}`);
  }
  return problems;
}

/** The hash fields of an override, as field, value, field, value … (what HSET takes). */
export function overrideFields(
  override: KeyOverride,
  options: OverrideSetOptions | undefined,
  createdAt: number,
): string[] {
  const fields = ['action', override.action];
  if (override.action === 'limit') fields.push('limit', String(override.limit));
  fields.push('createdAt', String(createdAt));
  if (options?.note !== undefined) fields.push('note', options.note);
  if (options?.by !== undefined) fields.push('by', options.by);
  return fields;
}

/**
 * An override from its hash (`fields`, as HGETALL gives it) and PTTL, for the limited `key`.
 * @throws UnexpectedReplyError when the hash is no override (what the Lua refuses too)
 */
export function parseOverride(
  key: string,
  overrideKey: string,
  fields: Record<string, string>,
  pttl: number,
): StoredOverride {
  const { action, limit, createdAt, note, by } = fields;
  const limitValue = Number(limit);
  let override: KeyOverride;
  if (action === 'limit' && /^\d+$/.test(limit ?? '') && limitValue <= MAX_BUCKETED_LIMIT) {
    override = { action, limit: limitValue };
  } else if (action === 'exempt' || action === 'block') {
    override = { action };
  } else {
    throw new UnexpectedReplyError(`HGETALL ${overrideKey} (no valid override: delete it)`, fields);
  }
  return storedOverride(key, override, { note, by }, Number(createdAt) || 0, pttl);
}

/** An override as `get` answers it; `pttl` as PTTL answers (-1: no expiry). */
export function storedOverride(
  key: string,
  override: KeyOverride,
  options: Pick<OverrideSetOptions, 'note' | 'by'> | undefined,
  createdAt: number,
  pttl: number,
): StoredOverride {
  // Only what is stored: a caller's object may carry more.
  const clean: KeyOverride =
    override.action === 'limit' ? { action: 'limit', limit: override.limit } : { action: override.action };
  const stored: StoredOverride = { key, override: clean, createdAt };
  if (options?.note !== undefined) stored.note = options.note;
  if (options?.by !== undefined) stored.by = options.by;
  if (pttl >= 0) stored.expiresInMs = pttl;
  return stored;
}

/** Overrides in the order `list` returns them: by limited key. */
export function byKey(a: StoredOverride, b: StoredOverride): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
