/** A share of traffic sent to a candidate version, sticky per key: no client flips versions within a window. */
export interface CanarySplit {
  /** The candidate function, e.g. `sliding_allow_v2`. */
  functionName: string;
  /** Share of keys sent to it, from 0 to 100 (two decimals are honoured). */
  percent: number;
}

/** Which functions a limiter calls: a stable one, and optionally a canary with a share of the keys. */
export interface FunctionSelection {
  functionName: string;
  canary?: CanarySplit;
}
