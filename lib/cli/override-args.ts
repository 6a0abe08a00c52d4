import { hostname, userInfo } from 'node:os';
import {
  DEFAULT_OVERRIDE_LIST_COUNT,
  MAX_OVERRIDE_LIST_COUNT,
  MAX_OVERRIDE_TEXT,
  type KeyOverride,
} from '../core/key-overrides';
import { MAX_BUCKETED_LIMIT, MAX_WINDOW_MS } from '../core/limit-rule';
import { describeKeyPrefixProblems, whyNoOverrideKey } from '../core/override-keys';
import { usage } from './exit-codes';
import { DURATION_UNIT_MS } from './format';
import { parseWholeNumberFlag } from './whole-number-flag';

/** What the `overrides` flags say, checked: set reads override, ttlMs, note and by; list match and count. */
export interface OverrideArgs {
  override?: KeyOverride;
  /** undefined: never expires. */
  ttlMs?: number;
  note?: string;
  /** `--by`, or the OS user@host. */
  by?: string;
  /** A glob over the keys without their prefix. */
  match?: string;
  count?: number;
}

/** The flag values the `overrides` commands read, as `parseArgs` gives them. */
type OverrideFlagValues = { [flag in 'limit' | 'ttl' | 'note' | 'by' | 'match' | 'count']?: string } & {
  exempt?: boolean;
  block?: boolean;
};

/** The arguments of an `overrides` command, checked before connecting: a bad flag or key is a usage error. */
export function parseOverrideArgs(
  command: string,
  key: string | undefined,
  keyPrefix: string,
  values: OverrideFlagValues,
): OverrideArgs {
  if (describeKeyPrefixProblems(keyPrefix).length > 0) {
    throw usage(
      `--key-prefix must have no { or } (a limiter refuses such a prefix: it would be every key's hash tag), got "${keyPrefix}"`,
    );
  }
  if (key !== undefined) {
    if (key.length === 0) throw usage(`${command} needs a non-empty <key>`);
    const why = whyNoOverrideKey(keyPrefix + key);
    if (why) throw usage(`<key> "${key}" cannot carry an override: ${why}`);
  }
  if (command === 'overrides list') return { match: match(values.match), count: count(values.count) };
  if (command !== 'overrides set') return {};
  return {
    override: overrideOf(values),
    ttlMs: values.ttl === undefined ? undefined : parseDuration(values.ttl),
    note: text('note', values.note),
    by: text('by', values.by) ?? defaultBy(),
  };
}

/** `--ttl` in ms: a whole number of ms, or one with a unit (`250ms`, `30s`, `15m`, `1h`, `7d`), up to a year. */
function parseDuration(text: string): number {
  const parsed = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  const ms = parsed ? Number(parsed[1]) * DURATION_UNIT_MS[parsed[2] ?? 'ms'] : NaN;
  if (!(ms >= 1 && ms <= MAX_WINDOW_MS)) {
    throw usage(
      `--ttl must be a duration from 1 ms to a year: ms, or a whole number with ms, s, m, h or d (30s, 15m, 7d), got "${text}"`,
    );
  }
  return ms;
}

/** Who sets an override when `--by` is not given: `user@host` of this OS, or undefined when unknown. */
function defaultBy(): string | undefined {
  let user: string | undefined;
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry for this uid (some containers): the environment may still say.
    user = process.env.USER ?? process.env.USERNAME;
  }
  const who = user ? `${user}@${hostname()}` : undefined;
  return who && who.length <= MAX_OVERRIDE_TEXT ? who : undefined;
}

function overrideOf(values: OverrideFlagValues): KeyOverride {
  const given = [
    values.limit !== undefined && '--limit',
    values.exempt && '--exempt',
    values.block && '--block',
  ].filter(Boolean);
  if (given.length !== 1) {
    throw usage(
      given.length === 0
        ? 'overrides set needs one of --limit <n>, --exempt or --block'
        : `give one of --limit, --exempt and --block, not ${given.join(' and ')}`,
    );
  }
  if (values.exempt) return { action: 'exempt' };
  if (values.block) return { action: 'block' };
  const limit = parseWholeNumberFlag('limit', values.limit as string, { min: 0, max: MAX_BUCKETED_LIMIT });
  return { action: 'limit', limit };
}

function text(flag: 'note' | 'by', value: string | undefined): string | undefined {
  if (value !== undefined && value.length > MAX_OVERRIDE_TEXT) {
    throw usage(`--${flag} must be at most ${MAX_OVERRIDE_TEXT} characters, got ${value.length}`);
  }
  return value;
}

function match(value: string | undefined): string | undefined {
  if (value !== undefined && value.length === 0)
    throw usage('--match must be a non-empty glob pattern, e.g. "login:*"');
  return value;
}

function count(value: string | undefined): number {
  if (value === undefined) return DEFAULT_OVERRIDE_LIST_COUNT;
  return parseWholeNumberFlag('count', value, { min: 1, max: MAX_OVERRIDE_LIST_COUNT });
}
