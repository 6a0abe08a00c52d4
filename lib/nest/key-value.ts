import { createHash } from 'node:crypto';

/** Longest encoded request-derived value kept verbatim in a Redis key; longer ones are hashed. */
const MAX_VERBATIM_LENGTH = 128;

/**
 * Characters a request value may not carry into a key: non-printable ASCII, `{` `}` (a client would
 * choose the slot), `:` (the part separator) and `%` itself (so the encoding cannot collide).
 */
const UNSAFE = /[^\x21-\x7e]|[%{}:]/gu;
/** The same class without the global flag: a test keeps no `lastIndex` state between calls. */
const HAS_UNSAFE = new RegExp(UNSAFE.source, 'u');

/**
 * A request value as a key segment, or undefined when there is none (only strings, finite numbers and
 * booleans count). Injective: percent-encoded, and over 128 characters `%sha256.<hex>`.
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
