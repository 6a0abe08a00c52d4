/** Buckets a key falls into: a percentage with two decimals. */
export const CANARY_BUCKETS = 10_000;

/** The canary bucket (0 … 9999) of a key: FNV-1a then murmur3's finaliser, so similar keys spread evenly. */
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
