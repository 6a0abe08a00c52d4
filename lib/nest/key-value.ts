import { createHash } from 'node:crypto';

/** Longest request-derived value kept verbatim in a Redis key; longer ones are hashed. */
const MAX_VERBATIM_LENGTH = 128;

/**
 * Turns a request-derived value into a key segment, or undefined when there is none. Only strings,
 * finite numbers and booleans count: an object or array in a body field is "missing", not a bucket
 * named "[object Object]" shared by every such request.
 */
export function toKeySegment(value: unknown): string | undefined {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else if (typeof value === 'boolean' || typeof value === 'bigint') text = String(value);
  else return undefined;
  if (text.length === 0) return undefined;
  if (text.length > MAX_VERBATIM_LENGTH) return `sha256.${createHash('sha256').update(text).digest('hex')}`;
  // Braces would form a cluster hash tag and whitespace or control bytes make keys unreadable in
  // redis-cli; percent-encode them (and "%" itself, so the encoding cannot collide with input).
  return text.replace(/[^\x21-\x7e]|[%{}]/gu, (char) =>
    [...Buffer.from(char, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}
