/* The tables rate_limit_v2's parts pass to one another (Lua has no types), their fields camel-cased. */

/** A log key as read (`read_log`): a state without `precisionMs`. */
export interface LogState {
  precisionMs?: undefined;
  count: number;
  ahead?: number;
  nowMs: number;
  cutoffMs: number;
}

/** A bucketed key as read (`read_hash`; its layout in bucketed_read.lua's header). */
export interface BucketState {
  precisionMs: number;
  count: number;
  oldest?: number;
  newest?: number;
  ids: string;
  gone?: string[];
  /** Per sub-window when read whole (a Lua table: -0 and 0 are one key, as in a Map). */
  counts?: Map<number, number>;
  indexes?: number[];
  rewrite: boolean;
  ahead?: number;
  storedOldest?: number;
  storedNewest?: number;
}

export type KeyState = LogState | BucketState;

/** One limit of a decision (`new_limit`): keys, overrides and the decision's fields set later. */
export interface Limit {
  windowMs: number;
  precisionMs: number;
  shadow: boolean;
  hasOverride: boolean;
  kind: number;
  effective: number;
  key: string;
  overrideKey?: string;
  state?: KeyState;
  room: boolean;
  retried?: boolean;
}
