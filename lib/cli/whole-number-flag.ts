import { usage } from './exit-codes';

/** The range of a whole-number flag, and what it counts when the message should say. */
export interface WholeNumberRange {
  min: number;
  max: number;
  /** What the number counts, for the message: `milliseconds` gives "a whole number of milliseconds from …". */
  noun?: string;
}

/**
 * A flag's value as a whole number from `min` to `max` (digits only: no sign, point or exponent).
 * @throws CliError (usage) naming the flag, e.g. `--count must be a whole number from 1 to 10000, got "0"`
 */
export function parseWholeNumberFlag(flag: string, value: string, { min, max, noun }: WholeNumberRange): number {
  const parsed = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(parsed >= min && parsed <= max)) {
    throw usage(`--${flag} must be a whole number${noun ? ` of ${noun}` : ''} from ${min} to ${max}, got "${value}"`);
  }
  return parsed;
}
