/** Buckets a key falls into: a percentage with two decimals. */
export const CANARY_BUCKETS = 10_000;

/**
 * The canary bucket (0 … 9999) of a key: FNV-1a over its UTF-16 code units, then murmur3's
 * finaliser so that keys differing only in their last characters ("user:1", "user:2", …) spread
 * evenly. A pure function of the key, so the split is sticky: a key goes to the same version for a
 * given share, in every process, and never flips inside one window.
 */
export function canaryBucket(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return (hash >>> 0) % CANARY_BUCKETS;
}
