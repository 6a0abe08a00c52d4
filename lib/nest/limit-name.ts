import { describeValue } from '../core/value-checks';

/** A limit name goes into a Redis key and the `RateLimit-Policy` header: characters neither must escape. */
const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/** Problems of a limit `name`, naming the option as `label`; empty when valid. */
export function describeNameProblems(name: unknown, label: string): string[] {
  if (typeof name === 'string' && NAME_PATTERN.test(name)) return [];
  return [`${label} must be 1 to 64 letters, digits, "_", "-" or ".", got ${describeValue(name)}`];
}
