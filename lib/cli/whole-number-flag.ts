import { usage } from './exit-codes';

/** A flag's value as a whole number (digits only) from `min` to `max`, or a usage error naming the flag and `noun`. */
export function parseWholeNumberFlag(
  flag: string,
  value: string,
  range: { min: number; max: number; noun?: string },
): number {
  const { min, max, noun } = range;
  const parsed = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(parsed >= min && parsed <= max)) {
    throw usage(`--${flag} must be a whole number${noun ? ` of ${noun}` : ''} from ${min} to ${max}, got "${value}"`);
  }
  return parsed;
}
