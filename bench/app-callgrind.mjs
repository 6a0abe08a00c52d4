// Instructions per HTTP request of the benchmark's guarded app, counted by callgrind: what a guarded
// request costs the app beside a route that awaits one bare FCALL, in a figure the other work on the
// machine does not move (per-request CPU time at 1 connection swings by more than the difference).
// Not part of `npm run bench` (the app under valgrind runs ~50× slower): run it on its own after a build.
//
//   node bench/app-callgrind.mjs                 # 10 rounds of 600 requests per route
//   APP_CALLGRIND_REQUESTS=1000 APP_CALLGRIND_ROUNDS=20 node bench/app-callgrind.mjs
//   node bench/app-callgrind.mjs bench/results/app-callgrind-<date>.json   # the table of a saved run
//   BENCH_LABEL=after node bench/app-callgrind.mjs   # a file of its own, app-callgrind-<date>-after.json
//
// Starts a Redis of its own and the `ours` configuration of http-app.mjs (the quick start's
// RateLimitModule.forRoot({ redis }), default options, + @SlidingLimit on GET /, and GET /fcall:
// @SkipRateLimit(), the handler awaits one bare FCALL of the article's sliding_allow_v1 on a
// connection of its own) under
// `valgrind --tool=callgrind` with instrumentation off; warms both routes up until V8 has optimized
// them (APP_CALLGRIND_WARMUP requests each), turns instrumentation on, and per round and route zeroes
// the counters, sends the requests one at a time over one keep-alive connection, and dumps. Each dump
// is split into V8's optimizing compiler (TurboFan, which recompiles after the garbage collector drops
// code of functions that have not run for a while), the garbage collector, and the rest: the
// request's own work, the figure compared. A full GC comes every few thousand requests; it lands in
// one round of one route and raises that round's rest too (by some 30k: code runs unoptimized after
// it, and its marking slows allocation). So the routes alternate in short rounds, and the rest is
// the median over the rounds without a full GC (GC under twice the lowest round's); compiler and GC
// are means over every round. Prints Markdown and writes bench/results/app-callgrind-<date>.json.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BARE_FUNCTION } from './lib/decisions.mjs';
import { snapshotDist } from './lib/package-snapshot.mjs';
import { installCleanup, startRedis, stopAll, tempDir, track } from './lib/processes.mjs';
import { commandCalls } from './lib/redis-stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const Redis = require('ioredis').default;
const REQUESTS = Number(process.env.APP_CALLGRIND_REQUESTS ?? 600);
const ROUNDS = Number(process.env.APP_CALLGRIND_ROUNDS ?? 10);
const WARMUP = Number(process.env.APP_CALLGRIND_WARMUP ?? 8_000);
const ROUTES = ['/', '/fcall'];
const LIMIT = 1_000_000;
const WINDOW_MS = 1_000;

if (process.argv[2]) {
  report(JSON.parse(readFileSync(process.argv[2], 'utf8')).results);
  process.exit(0);
}

installCleanup(60 * 60_000);
const dist = await snapshotDist(join(here, '..'));
// The guard's function (the build's default) and the one GET /fcall calls, recorded with the results.
const functionNames = { functionName: require(dist).DEFAULT_FUNCTION_NAME, fcallFunction: BARE_FUNCTION };
const redis = await startRedis();
const dumps = tempDir('sliding-bench-app-callgrind-');

const app = track(
  spawn(
    'valgrind',
    [
      '--tool=callgrind',
      // V8 writes machine code at run time: valgrind must notice it changing.
      '--smc-check=all-non-file',
      '--instr-atstart=no',
      `--callgrind-out-file=${join(dumps, 'callgrind.%p')}`,
      process.execPath,
      join(here, 'http-app.mjs'),
      'ours',
      String(redis.port),
      String(LIMIT),
      String(WINDOW_MS),
    ],
    // A 5 s limiter timeout: under valgrind a call can outlast the default 250 ms, and its retry would
    // be a second FCALL for the request (which the count below refuses).
    { env: { BENCH_TIMEOUT_MS: '5000', ...process.env, BENCH_DIST: dist }, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] },
  ),
);
app.stderr.resume();
const port = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('the app under callgrind did not start within 120 s')), 120_000);
  app.on('message', (message) => {
    if (message?.port) {
      clearTimeout(timer);
      resolve(message.port);
    }
  });
  app.once('exit', (code) => reject(new Error(`the app exited with ${code} before listening`)));
});

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const get = (path) =>
  new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path, agent, headers: { 'x-client-id': 'c0' } }, (res) => {
      res.resume();
      res.once('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${path}: ${res.statusCode}`))));
    });
    request.once('error', reject);
  });
/**
 * One request outside the measurement, before a round: the keep-alive connection has idled while the
 * last dump was read (seconds under load), and the app may have closed it meanwhile — a request on a
 * connection the server is closing fails with ECONNRESET before it reached the app, so it is sent again.
 */
const wakeUp = (path) =>
  get(path).catch((error) => {
    if (error?.code !== 'ECONNRESET') throw error;
    return get(path);
  });
const control = (...args) => execFileSync('callgrind_control', [...args, String(app.pid)], { stdio: 'ignore' });
const stats = new Redis({ host: '127.0.0.1', port: redis.port });
const fcalls = async () => (await commandCalls(stats)).fcall ?? 0;

/** The next dump callgrind writes (`callgrind.<pid>.<n>`), once complete. */
async function nextDump(seen) {
  for (let waited = 0; waited < 120_000; waited += 200) {
    const file = readdirSync(dumps).find((name) => /\.\d+\.\d+$/.test(name) && !seen.has(name));
    const text = file ? readFileSync(join(dumps, file), 'utf8') : '';
    if (/^totals: /m.test(text)) {
      seen.add(file);
      return join(dumps, file);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('callgrind wrote no dump within 120 s');
}

/** Self instructions of a dump, split: V8's optimizing compiler, the garbage collector, the rest. */
function splitDump(file) {
  const listing = execFileSync('callgrind_annotate', ['--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  const split = { total: 0, compiler: 0, gc: 0 };
  for (const line of listing.split('\n')) {
    const match = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
    if (!match || match[2].includes('PROGRAM TOTALS')) continue;
    const count = Number(match[1].replaceAll(',', ''));
    split.total += count;
    if (match[2].includes('v8::internal::compiler::')) split.compiler += count;
    else if (/Scaveng|Heap::|Mark|Sweep|Evacuat|Marking|ConcurrentMarking/.test(match[2])) split.gc += count;
  }
  return { ...split, rest: split.total - split.compiler - split.gc };
}

const results = Object.fromEntries(ROUTES.map((route) => [route, []]));
try {
  for (const route of ROUTES) for (let i = 0; i < WARMUP; i++) await get(route);
  control('-i', 'on');
  for (const route of ROUTES) for (let i = 0; i < 300; i++) await get(route);
  const seen = new Set();
  for (let round = 0; round < ROUNDS; round++) {
    for (const route of round % 2 === 0 ? ROUTES : [...ROUTES].reverse()) {
      await wakeUp(route);
      control('-z');
      const before = await fcalls();
      for (let i = 0; i < REQUESTS; i++) await get(route);
      const calls = (await fcalls()) - before;
      control('-d');
      const file = await nextDump(seen);
      const split = splitDump(file);
      rmSync(file);
      // Every request of both routes makes one FCALL: fewer means a decision fell back to its policy.
      if (calls !== REQUESTS) throw new Error(`${route}: ${calls} FCALLs for ${REQUESTS} requests`);
      const parts = Object.fromEntries(Object.entries(split).map(([k, v]) => [k, v / REQUESTS]));
      results[route].push(parts);
      process.stderr.write(
        `${route} round ${round + 1}: ${(parts.rest / 1000).toFixed(1)}k instructions per request ` +
          `(+ compiler ${(parts.compiler / 1000).toFixed(1)}k, GC ${(parts.gc / 1000).toFixed(1)}k)\n`,
      );
    }
  }
} finally {
  agent.destroy();
  stats.disconnect();
  await stopAll();
}

const date = new Date().toISOString().slice(0, 10);
// A labelled run (BENCH_LABEL) is saved under a name of its own, so it never overwrites another.
const label = process.env.BENCH_LABEL;
writeFileSync(
  join(here, 'results', label ? `app-callgrind-${date}-${label}.json` : `app-callgrind-${date}.json`),
  `${JSON.stringify({ date, ...functionNames, REQUESTS, ROUNDS, WARMUP, results }, null, 2)}\n`,
);
report(results);

/** Prints the table of `results` (rounds per route, each split per request). */
function report(results) {
  // The upper middle of an even count (not measure.mjs' mean of the two middles): the saved runs'
  // tables were printed this way, and reprinting one gives the same figures.
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const mean = (values) => values.reduce((sum, v) => sum + v, 0) / values.length;
  const lowestGc = Math.min(...ROUTES.flatMap((route) => results[route].map((r) => r.gc)));
  const withoutFullGc = (route) => results[route].filter((r) => r.gc < 2 * lowestGc);
  const rest = (route) => median(withoutFullGc(route).map((r) => r.rest));
  const k = (n) => `${(n / 1000).toFixed(1)}k`;
  console.log(
    '| route | the rest (median, rounds without a full GC) | TurboFan (mean) | GC (mean) | rounds without a full GC |',
  );
  console.log('|---|---|---|---|---|');
  for (const route of ROUTES)
    console.log(
      `| GET ${route} | ${k(rest(route))} | ${k(mean(results[route].map((r) => r.compiler)))} | ` +
        `${k(mean(results[route].map((r) => r.gc)))} | ${withoutFullGc(route).length} of ${results[route].length} |`,
    );
  console.log(
    `\nThe guard's own work: ${k(rest('/') - rest('/fcall'))} instructions per request more than the FCALL route.`,
  );
}
