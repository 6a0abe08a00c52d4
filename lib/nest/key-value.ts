import { createHash } from 'node:crypto';

/** Longest encoded request-derived value kept verbatim in a Redis key; longer ones are hashed. */
const MAX_VERBATIM_LENGTH = 128;

/**
 * Characters a request-derived value may not carry into a key as they are: anything outside printable
 * ASCII (unreadable in redis-cli, unbounded in bytes), `{` `}` (a cluster hash tag would let a client
 * choose the slot), `:` (the separator between key parts: `user "a:param.id:b"` must not read as two
 * parts) and `%` itself (so the encoding is reversible and cannot collide with input).
 */
const UNSAFE = /[^\x21-\x7e]|[%{}:]/gu;
/** The same class without the global flag: a test keeps no `lastIndex` state between calls. */
const HAS_UNSAFE = new RegExp(UNSAFE.source, 'u');

/**
 * Turns a request-derived value into a key segment, or undefined when there is none. Only strings,
 * finite numbers and booleans count: an object or array in a body field is "missing", not a bucket
 * named "[object Object]" shared by every such request.
 *
 * The segment is injective: distinct values give distinct segments. Values are percent-encoded;
 * encodings over 128 characters are replaced by `%sha256.<hex>`, which no encoded value can equal
 * (a literal `%` is always encoded as `%25`). Every segment is thus at most 128 characters.
 */
export function toKeySegment(value: unknown): string | undefined {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else if (typeof value === 'boolean' || typeof value === 'bigint') text = String(value);
  else return undefined;
  if (text.length === 0) return undefined;
  if (text.length > MAX_VERBATIM_LENGTH) return hashed(text);
  // Almost every value is safe as it is: a test is several times cheaper than a replace that finds nothing.
  if (!HAS_UNSAFE.test(text)) return text;
  const encoded = text.replace(UNSAFE, percentEncode);
  return encoded.length <= MAX_VERBATIM_LENGTH ? encoded : hashed(text);
}

function hashed(text: string): string {
  return `%sha256.${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

function percentEncode(char: string): string {
  return [...Buffer.from(char, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}
