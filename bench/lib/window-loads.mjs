// The request streams of bench/redis-cpu-windows.mjs: which key a request goes to, when (a synthetic
// clock for the sliding windows) and under which member, so every variant sees the same stream.
import { createHash } from 'node:crypto';

/** The synthetic clock's origin (2025-01-01), as in bench/callgrind-versions.mjs. */
export const T0 = 1_735_660_800_000;

/**
 * The FCALLs of requests `from` .. `to - 1` to a sliding window of a rate_limit_v2 text (its functions
 * registered under `version`, e.g. v2): request m goes to key m % keys at its key's time, a request
 * every windowMs / (load × limit) ms per key, so `load` 0.9 keeps a key at 90% of its limit (everything
 * admitted) and 2 offers twice its limit (about half refused). Members are the limiter's shape: an
 * 8-character prefix and a base-36 counter. With `overrideKey`, each key's override key is passed, as
 * the limiter does by default (none set: one EXISTS).
 */
export function slidingCalls({ version, windowMs, limit, precisionMs, load, keys, overrideKey }, from, to) {
  const interval = windowMs / (load * limit);
  const calls = [];
  for (let m = from; m < to; m++) {
    const key = `bench:{k${m % keys}}`;
    const now = T0 + Math.floor(Math.floor(m / keys) * interval);
    const args = [now, `Ab3dEf9h${m.toString(36)}`, 1000, 1, windowMs, limit, precisionMs, overrideKey ? 2 : 0];
    calls.push({ name: `sliding_allow_${version}`, keys: overrideKey ? [key, `${key}|override`] : [key], args });
  }
  return calls;
}

/**
 * Requests a fixed window (@nestjs/throttler's, blockDuration = ttl, its default) takes over one of
 * its cycles at `load` × its limit per window: below the limit, one window's requests (then the
 * counter expires and a new one starts); above, the limit, the request that sets the block, and the
 * requests refused while the block (ttl long, from the middle of the window) outlasts the counter:
 * limit × (load + 1) in all, of which `limit` are admitted.
 */
export function fixedWindowCycle(limit, load) {
  if (load <= 1) return { requests: Math.round(load * limit), admitted: Math.round(load * limit) };
  return { requests: Math.round(limit * (load + 1)), admitted: limit };
}

/**
 * The tracker keys @nestjs/throttler's guard would make for `count` clients: a SHA-256 in hex of
 * class, handler, throttler name and tracker (the storage wraps it as `_throttler:{<key>}`).
 */
export function throttlerKeys(count, prefix) {
  return Array.from({ length: count }, (_, i) =>
    createHash('sha256').update(`BenchController-get-default-${prefix}${i}`).digest('hex'),
  );
}
