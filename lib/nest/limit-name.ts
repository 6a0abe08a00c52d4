import { describeValue } from '../core/value-checks';

/**
 * A limit name ends up in a Redis key and, quoted, in the IETF `RateLimit-Policy` header, so it is
 * kept to characters that need no escaping in either and cannot open a cluster hash tag.
 */
const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/** Problems of a limit `name`, naming the option as `label`; empty when valid. */
export function describeNameProblems(name: unknown, label: string): string[] {
  if (typeof name === 'string' && NAME_PATTERN.test(name)) return [];
  return [`${label} must be 1 to 64 letters, digits, "_", "-" or ".", got ${describeValue(name)}`];
}
