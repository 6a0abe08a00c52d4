// Redis' instructions per decision, counted by callgrind (steady under any other load on the host),
// of rate_limit_v2's two windows (the log and the bounded-memory window) against the fixed-window
// counter of @nestjs-redis/throttler-storage, all in one run. Not part of `npm run bench` (Redis under
// valgrind runs ~50× slower): about 5 minutes on its own, after `npm run build`.
//
//   node bench/redis-cpu-windows.mjs                       # everything, 3,000 measured decisions each
//   CALLGRIND_DECISIONS=6000 node bench/redis-cpu-windows.mjs 'v2 bounded' 'fixed window'
//   CALLGRIND_LABEL=before node bench/redis-cpu-windows.mjs   # results/redis-cpu-windows-<date>-before.json
//
// Every variant gets a fresh server under `valgrind --tool=callgrind` (bench/lib/callgrind-redis.mjs):
// warm-up, zero the counters, the measured decisions (200 in flight), SHUTDOWN, the dump's total.
// Two loads, each of 100 per minute per key:
//   all admitted   90% of the limit: nothing is refused
//   half refused   twice the limit: a sliding window refuses about half
// - The sliding windows (sliding_allow_v2, cost 1; the log, and the bounded-memory window at 1 s
//   precision) run on busy keys on a synthetic clock: a full window of the load written first, then
//   a second full window measured (33 keys × 90 requests; 15 keys × 200 at twice the limit). Each
//   key's override key is passed, as the limiter does by default (none set: one EXISTS).
// - The fixed window is the real thing: RedisThrottlerStorage.increment() on a node-redis client
//   (the EVALSHA of its script: EXISTS of the block key, HINCRBY, PTTL, PEXPIRE on a new counter,
//   SET of the block key past the limit), with @nestjs/throttler's defaults (blockDuration = ttl).
//   It counts on the server's clock, so each key lives one cycle of the load from a fresh counter
//   (bench/lib/window-loads.mjs): 90 requests at 90%; at twice the limit 300, of which 100 are
//   admitted (its block outlasts the window: it refuses 2/3 of that load, cheaply). A counter's
//   expiry at the end of its window (one small deletion per cycle) is not counted.
// - Floors: an FCALL of a function that returns 0, with v2's keys and arguments; an EVALSHA of
//   `return 0` with the throttler's. What any scripted decision pays before doing anything.
// Prints Markdown; writes bench/results/redis-cpu-windows-<date>[-<label>].json.
//
//   CALLGRIND_SERVER=<path>/valkey-server   another server binary (Valkey's build has symbols to profile)
//   CALLGRIND_KEEP=<dir>                    keeps each variant's callgrind dump there, for callgrind_annotate
//   CALLGRIND_LUA=<path | rev:path | rev>   another rate_limit_v2 text to measure (e.g. the last
//                                           commit's: HEAD~1), as bench/lib/callgrind-redis.mjs reads it
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { libraryText, startCallgrindRedis, stopAndCount, zeroCounters } from './lib/callgrind-redis.mjs';
import { installCleanup, stopAll } from './lib/processes.mjs';
import { fixedWindowCycle, slidingCalls, throttlerKeys } from './lib/window-loads.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const DECISIONS = Number(process.env.CALLGRIND_DECISIONS ?? 3000);
const KEYS = 100; // the floors' keys
const IN_FLIGHT = 200;
const WINDOW = { windowMs: 60_000, limit: 100 };
const LOADS = { 'all admitted': 0.9, 'half refused': 2 };
const FLOOR_LIBRARY = "#!lua name=bench_floor\nredis.register_function('bench_empty', function() return 0 end)";
const LIBRARY = libraryText(process.env.CALLGRIND_LUA ?? join(here, '..', 'lib', 'redis', 'lua', 'rate_limit_v2.lua'));
const keepName = (variant, load) => `${variant}${load ? `-${load}` : ''}`.replaceAll(' ', '-');

/** Sends calls `IN_FLIGHT` at a time; returns how many were admitted. Throws on an error reply. */
async function sendFcalls(client, calls) {
  let admitted = 0;
  for (let at = 0; at < calls.length; at += IN_FLIGHT) {
    const pipeline = client.pipeline();
    for (const { name, keys, args } of calls.slice(at, at + IN_FLIGHT))
      pipeline.fcall(name, keys.length, ...keys, ...args);
    for (const [error, reply] of await pipeline.exec()) {
      if (error) throw error;
      admitted += Array.isArray(reply) && reply[0] === 1 ? 1 : 0;
    }
  }
  return admitted;
}

/**
 * A sliding window of rate_limit_v2 at `load`: each key gets a full window written first, then a
 * second full window is measured (a window's worth of requests per key, so that a key refusing in
 * bursts, as a bounded-memory key at twice its limit does, is measured over all of it).
 */
async function measureSliding(variant, load, precisionMs) {
  const redis = await startCallgrindRedis();
  await redis.client.call('FUNCTION', 'LOAD', LIBRARY.text);
  const perWindow = Math.round(load * WINDOW.limit);
  const keys = Math.max(1, Math.round(DECISIONS / perWindow));
  const spec = { ...WINDOW, version: LIBRARY.version, precisionMs, load, keys, overrideKey: true };
  const warmUp = perWindow * keys;
  await sendFcalls(redis.client, slidingCalls(spec, 0, warmUp));
  zeroCounters(redis);
  const admitted = await sendFcalls(redis.client, slidingCalls(spec, warmUp, 2 * warmUp));
  const instructions = await stopAndCount(redis, keepName(variant, load));
  return { decisions: warmUp, keys, admitted, instructions };
}

/** The requests of one fixed-window cycle per key, in rounds over the keys, `IN_FLIGHT` at a time. */
async function incrementAll(storage, keys, requestsPerKey) {
  const { ttl, limit } = { ttl: WINDOW.windowMs, limit: WINDOW.limit };
  const requests = [];
  for (let r = 0; r < requestsPerKey; r++) for (const key of keys) requests.push(key);
  let admitted = 0;
  for (let at = 0; at < requests.length; at += IN_FLIGHT) {
    // Issued in one tick: node-redis writes them as one pipeline.
    const records = await Promise.all(
      requests.slice(at, at + IN_FLIGHT).map((key) => storage.increment(key, ttl, limit, ttl, 'default')),
    );
    admitted += records.filter((record) => !record.isBlocked).length;
  }
  return admitted;
}

/** @nestjs-redis/throttler-storage's fixed window: each key one cycle of `load` from a fresh counter. */
async function measureFixedWindow(variant, load) {
  const { createClient } = require('redis');
  const { RedisThrottlerStorage } = require('@nestjs-redis/throttler-storage');
  const redis = await startCallgrindRedis();
  const client = createClient({ socket: { host: '127.0.0.1', port: redis.port, reconnectStrategy: false } });
  client.on('error', () => {});
  await client.connect();
  const storage = new RedisThrottlerStorage(client);
  const cycle = fixedWindowCycle(WINDOW.limit, load);
  const keys = Math.max(1, Math.round(DECISIONS / cycle.requests));
  await incrementAll(storage, throttlerKeys(keys, 'warm-up-'), cycle.requests);
  zeroCounters(redis);
  const admitted = await incrementAll(storage, throttlerKeys(keys, 'client-'), cycle.requests);
  if (admitted !== keys * cycle.admitted) {
    // A counter expired mid-cycle (the run outlasted a window): the work measured is not the cycle's.
    throw new Error(`fixed window at ${load}×: ${admitted} admitted, expected ${keys * cycle.admitted}`);
  }
  client.destroy();
  const instructions = await stopAndCount(redis, keepName(variant, load));
  return { decisions: keys * cycle.requests, keys, admitted, instructions };
}

/** The floors: an empty FCALL with v2's keys and arguments, an empty EVALSHA with the throttler's. */
async function measureFloor(variant, kind) {
  const redis = await startCallgrindRedis();
  const { client } = redis;
  await client.call('FUNCTION', 'LOAD', FLOOR_LIBRARY);
  const sha = await client.call('SCRIPT', 'LOAD', 'return 0');
  const call = (m) => {
    const key = `bench:{k${m % KEYS}}`;
    if (kind === 'fcall')
      return ['fcall', 'bench_empty', 2, key, `${key}|override`, m, `Ab3dEf9h${m}`, 1000, 1, 60000, 100, 0, 2];
    return [
      'evalsha',
      sha,
      2,
      `_throttler:{${key}}`,
      `_throttler:{${key}}:block:default`,
      'default',
      60000,
      100,
      60000,
    ];
  };
  const run = async (from, to) => {
    for (let at = from; at < to; at += IN_FLIGHT) {
      const pipeline = client.pipeline();
      for (let m = at; m < Math.min(at + IN_FLIGHT, to); m++) {
        const [command, ...args] = call(m);
        pipeline[command](...args);
      }
      for (const [error] of await pipeline.exec()) if (error) throw error;
    }
  };
  await run(0, DECISIONS);
  zeroCounters(redis);
  await run(DECISIONS, 2 * DECISIONS);
  const instructions = await stopAndCount(redis, keepName(variant));
  return { decisions: DECISIONS, keys: KEYS, admitted: DECISIONS, instructions };
}

const VARIANTS = {
  'fixed window': { label: '@nestjs-redis/throttler-storage fixed window', run: measureFixedWindow },
  'v2 log': { label: 'rate_limit_v2, log', run: (v, load) => measureSliding(v, load, 0) },
  'v2 bounded': { label: 'rate_limit_v2, bounded-memory (1 s)', run: (v, load) => measureSliding(v, load, 1000) },
  'empty FCALL': { label: 'floor: empty FCALL (v2 keys and arguments)', floor: 'fcall', run: measureFloor },
  'empty EVALSHA': {
    label: 'floor: empty EVALSHA (the throttler keys and arguments)',
    floor: 'evalsha',
    run: measureFloor,
  },
};

installCleanup(60 * 60_000);
const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(VARIANTS);
for (const name of chosen)
  if (!VARIANTS[name]) throw new Error(`unknown variant "${name}": ${Object.keys(VARIANTS).join(', ')}`);
const results = {};
try {
  for (const name of chosen) {
    const variant = VARIANTS[name];
    results[name] = {};
    for (const load of variant.floor ? ['any'] : Object.keys(LOADS)) {
      const result = variant.floor ? await variant.run(name, variant.floor) : await variant.run(name, LOADS[load]);
      results[name][load] = { ...result, perDecision: Math.round(result.instructions / result.decisions) };
      process.stderr.write(`${name}, ${load}: ${results[name][load].perDecision} instructions per decision\n`);
    }
  }
} finally {
  await stopAll();
}

const date = new Date().toISOString().slice(0, 10);
const label = process.env.CALLGRIND_LABEL ? `-${process.env.CALLGRIND_LABEL}` : '';
const server = process.env.CALLGRIND_SERVER ?? 'redis-server';
writeFileSync(
  join(here, 'results', `redis-cpu-windows-${date}${label}.json`),
  `${JSON.stringify({ date, server, library: LIBRARY.source, decisions: DECISIONS, window: WINDOW, loads: LOADS, results }, null, 2)}\n`,
);

const k = (n) => `${(n / 1000).toFixed(1)}k`;
const fixed = results['fixed window'];
console.log(`| Redis instructions per decision | ${Object.keys(LOADS).join(' | ')} |`);
console.log(
  `|---|${Object.keys(LOADS)
    .map(() => '---')
    .join('|')}|`,
);
for (const name of chosen) {
  const cells = Object.keys(LOADS).map((load) => {
    const r = results[name][load] ?? results[name].any;
    const admitted = VARIANTS[name].floor ? '' : ` (${Math.round((100 * r.admitted) / r.decisions)}% admitted)`;
    const base = fixed?.[load]?.perDecision;
    const ratio = base && name !== 'fixed window' ? `, **${(r.perDecision / base).toFixed(2)}×**` : '';
    return `${k(r.perDecision)}${ratio}${admitted}`;
  });
  console.log(`| ${VARIANTS[name].label} | ${cells.join(' | ')} |`);
}
