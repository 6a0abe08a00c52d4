export function isWholeNumberIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** The problem of `value` (named `label`) when it is not one of `allowed`. */
export function describeOneOf(value: unknown, allowed: readonly unknown[], label: string): string[] {
  return allowed.includes(value) ? [] : [`${label} must be one of ${allowed.join(', ')}, got ${describeValue(value)}`];
}

/** Whether `value` is an object with a method of each of these names. */
export function hasMethods(value: unknown, ...names: string[]): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function');
}

/** A short, printable description of any value for error messages. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === undefined || value === null) return String(value);
  if (typeof value === 'function') return 'a function';
  return Array.isArray(value) ? 'an array' : 'an object';
}
