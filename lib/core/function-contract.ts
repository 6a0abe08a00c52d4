import type { SlidingLimitRule } from './limit-rule';

/** The `now_ms` argument that asks a function to read the server's clock (TIME) itself. */
export const SERVER_TIME = '*';

/** Arguments of one allow call: every rule applies to the key at the same index. */
export interface AllowCall {
  keys: readonly string[];
  rules: readonly SlidingLimitRule[];
  nowMs: number | typeof SERVER_TIME;
  member: string;
  maxClockSkewMs: number;
  /** What the request weighs in every limit; 1 when absent. Only a full version takes another. */
  cost?: number;
  /** Read the keys' overrides in the call (a full version): KEYS are then `allowKeys(call)`. Default false. */
  overrides?: boolean;
}

/** What a function reply says about one limit. */
export interface LimitOutcome {
  allowed: boolean;
  count: number;
  remaining: number;
  retryAfterMs: number;
  resetMs: number;
  /** The limit that applied (a full version): an override's, 0 when blocked, else the rule's. */
  effectiveLimit?: number;
  /** The override that applied to this key, when one did (a full version). */
  override?: 'limit' | 'exempt' | 'block';
  /** True for a shadow limit (`mode: 'shadow'`): it never refuses; `allowed` says whether it had room. */
  shadow?: boolean;
  /** For a shadow limit: whether it would have refused this request, which the enforced limits admitted. */
  wouldRefuse?: boolean;
}

export interface CallOutcome {
  allowed: boolean;
  limits: LimitOutcome[];
}

/** A function deciding several independent requests in one call, each as the allow function would. */
export interface BatchFunction {
  /** What FCALL takes. */
  readonly name: string;
  /** ARGV of one call; its KEYS are the calls' keys, concatenated in the same order (or `keys`). */
  arguments(calls: readonly AllowCall[]): (string | number)[];
  /** KEYS of one call when they are more than the calls' keys (a full version). */
  keys?(calls: readonly AllowCall[]): string[];
  parseReply(reply: unknown, calls: readonly AllowCall[]): CallOutcome[];
}

/** Everything the limiter knows about one shipped library version: its names, arguments and replies. */
export interface FunctionContract {
  /** Short name used by operators, e.g. `v2`. */
  readonly version: string;
  /** Library name (`#!lua name=`), what FUNCTION DELETE takes. */
  readonly libraryName: string;
  /** File under `redis/lua/`. */
  readonly sourceFile: string;
  /** The deciding function, what FCALL takes and what `functionName` selects. */
  readonly allowFunction: string;
  /** A read-only function registered with `no-writes`, when the version has one. */
  readonly peekFunction?: string;
  /**
   * Whether the version decides everything a rule can say (v2): several keys, a cost, bounded windows,
   * shadow limits, overrides, the server's clock. v1 decides one key at cost 1 on the caller's clock.
   */
  readonly full: boolean;

  /** When the version has one, the function the limiter batches decisions with. */
  readonly batch?: BatchFunction;

  allowArguments(call: AllowCall): (string | number)[];
  /** KEYS of an allow call when they are more than `call.keys` (a full version). */
  allowKeys?(call: AllowCall): string[];
  /** How many KEYS an allow call has; given with `allowKeysAndArguments` or not at all. */
  allowKeyCount?(call: AllowCall): number;
  /** An allow call's KEYS and ARGV in one list, built without either (the decision path's one list per call). */
  allowKeysAndArguments?(call: AllowCall, keyCount: number): (string | number)[];
  parseAllowReply(reply: unknown, rules: readonly SlidingLimitRule[], cost?: number): CallOutcome;
  /** ARGV of a peek; given the `keys`, a version with `overrides` reads them (KEYS: `peekKeys`). */
  peekArguments?(
    nowMs: number | typeof SERVER_TIME,
    rules: readonly SlidingLimitRule[],
    cost?: number,
    keys?: readonly string[],
  ): (string | number)[];
  /** KEYS of a peek that reads overrides (`peekArguments` given the keys): the override keys follow. */
  peekKeys?(keys: readonly string[], rules: readonly SlidingLimitRule[]): string[];
  parsePeekReply?(reply: unknown, rules: readonly SlidingLimitRule[], cost?: number): CallOutcome;
}
