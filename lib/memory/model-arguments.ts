import { isFiniteNumber } from './lua-values';

/* What the two Lua libraries share for reading their arguments, in the model. */

export const INVALID_ARGUMENTS = 'ERR invalid arguments';
/** The Lua's MAX_WINDOW_MS: longer windows are refused before any write. */
export const MAX_WINDOW_MS = 1e15;
/** The Lua's MAX_TIME_MS: times and tolerances outside 0 … 1e15 ms are refused before any write. */
export const MAX_TIME_MS = 1e15;

/** The Lua's `is_time`. */
export function isTime(value: number | undefined): value is number {
  return isFiniteNumber(value) && value >= 0 && value <= MAX_TIME_MS;
}

/** The Lua's `n % 1 == 0` (Lua's `%` floors: a - floor(a / b) * b; NaN for infinities). */
export function isWhole(n: number): boolean {
  return n - Math.floor(n) === 0;
}
