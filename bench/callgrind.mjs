// Redis' instructions per decision, counted by callgrind: a figure no other work on the machine moves.
// Not part of `npm run bench` (Redis under valgrind runs ~50× slower): run it on its own after a build.
//
//   node bench/callgrind.mjs            # 10,000 decisions per variant
//   CALLGRIND_DECISIONS=20000 node bench/callgrind.mjs
//
// For each variant — consume() (defaults: the default function, override keys read, batched),
// consume() with batch off, a bare FCALL of the article's sliding_allow_v1 with the same limit and
// window, rate-limiter-flexible's RateLimiterRedis — over 100,000 keys at 64 in flight: starts
// redis-server under `valgrind --tool=callgrind` on a free loopback port, loads both shipped libraries
// through the limiter, warms up, zeroes the counters (`callgrind_control -z`), runs
// the decisions, shuts Redis down and reads the total instruction count of the dump it writes at
// exit. Prints Markdown and writes bench/results/callgrind-<date>.json.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KEYSPACE } from './lib/config.mjs';
import { BARE_FUNCTION, bareAdmitted, bareFcall, loadFunction, memberSource, outcomeOf } from './lib/decisions.mjs';
import { drive } from './lib/measure.mjs';
import { snapshotDist } from './lib/package-snapshot.mjs';
import { freePort, installCleanup, outputReady, redisServerArgs, stopAll, tempDir, track } from './lib/processes.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const Redis = require('ioredis').default;
const DECISIONS = Number(process.env.CALLGRIND_DECISIONS ?? 10_000);
const RULE = { limit: 1000, windowMs: 60_000 };

installCleanup(20 * 60_000);
const dist = await snapshotDist(join(here, '..'));
const { SlidingWindowLimiter } = require(dist);
const { RateLimiterRedis } = require('rate-limiter-flexible');

/** Starts redis-server under callgrind on a free loopback port: `{ port, server, dir }`. */
async function startServer() {
  const port = await freePort();
  const dir = tempDir('sliding-bench-callgrind-');
  const server = track(
    spawn(
      'valgrind',
      [
        '--tool=callgrind',
        `--callgrind-out-file=${join(dir, 'callgrind.out')}`,
        'redis-server',
        ...redisServerArgs(port, dir),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
  await outputReady(server, 'redis-server under callgrind', 60_000);
  return { port, server, dir };
}

/** The variants, on `client`: consume() batched and not, a bare FCALL, rate-limiter-flexible. */
async function variantsOn(client) {
  const next = memberSource();
  // Redis under valgrind is slow: the longest timeout, so that no decision falls back to the policy
  // (a degraded decision never reaches Redis and would count as a free one); no instance report.
  const slow = { timeoutMs: 60_000, report: false };
  const limiter = new SlidingWindowLimiter({ client, keyPrefix: 'cg:ours:', ...slow });
  const unbatched = new SlidingWindowLimiter({ client, keyPrefix: 'cg:unbatched:', batch: false, ...slow });
  for (const l of [limiter, unbatched]) await l.init();
  await loadFunction(SlidingWindowLimiter, client, BARE_FUNCTION);
  const flexible = new RateLimiterRedis({ storeClient: client, keyPrefix: 'cg:rlf', points: RULE.limit, duration: 60 });
  const key = (i) => String((i * 2_654_435_761) % KEYSPACE);
  return {
    limiters: [limiter, unbatched],
    calls: {
      ours: (i) => limiter.consume(key(i), RULE).then(outcomeOf),
      oursUnbatched: (i) => unbatched.consume(key(i), RULE).then(outcomeOf),
      bare: (i) => bareFcall(client, `cg:bare:${key(i)}`, Date.now(), RULE, next()).then(bareAdmitted),
      rlf: (i) => flexible.consume(key(i)).then(() => true),
    },
  };
}

// One server per variant: warm-up, zero the counters, the decisions, then SHUTDOWN; the dump written
// at exit holds what ran since the zeroing (the shutdown itself is a few thousand instructions).
const results = {};
try {
  for (const name of ['ours', 'oursUnbatched', 'bare', 'rlf']) {
    const { port, server, dir } = await startServer();
    // No reconnection once the server is shut down on purpose.
    const client = new Redis({ host: '127.0.0.1', port, commandTimeout: 120_000, retryStrategy: () => null });
    client.on('error', () => {});
    const { limiters, calls } = await variantsOn(client);
    const call = calls[name];
    await drive({ inFlight: 64, warmupMs: 0, durationMs: 120_000, maxOps: 2_000, call });
    execFileSync('callgrind_control', ['-z', String(server.pid)], { stdio: 'ignore' });
    const r = await drive({ inFlight: 64, warmupMs: 0, durationMs: 600_000, maxOps: DECISIONS, call });
    if (r.errors > 0 || r.degraded > 0)
      throw new Error(`${name}: ${r.errors} errors, ${r.degraded} decided without Redis: ${r.firstError?.message}`);
    for (const l of limiters) l.close?.();
    const exited = new Promise((resolve) => server.once('exit', resolve));
    await client.call('SHUTDOWN', 'NOSAVE').catch(() => undefined);
    client.disconnect();
    await exited;
    const text = readFileSync(join(dir, 'callgrind.out'), 'utf8');
    const instructions = Number(text.match(/^totals:\s*(\d+)/m)?.[1] ?? text.match(/^summary:\s*(\d+)/m)?.[1]);
    results[name] = { decisions: r.calls, instructions, perDecision: instructions / r.calls, errors: r.errors };
    process.stderr.write(`${name}: ${(instructions / r.calls / 1000).toFixed(1)}k instructions per decision\n`);
  }
} finally {
  await stopAll();
}

const date = new Date().toISOString().slice(0, 10);
writeFileSync(
  join(here, 'results', `callgrind-${date}.json`),
  `${JSON.stringify({ date, DECISIONS, results }, null, 2)}\n`,
);
const k = (name) => (results[name].perDecision / 1000).toFixed(1);
console.log('| variant | Redis instructions per decision | / bare FCALL |');
console.log('|---|---|---|');
for (const name of Object.keys(results))
  console.log(`| ${name} | ${k(name)}k | ${(results[name].perDecision / results.bare.perDecision).toFixed(3)}× |`);
