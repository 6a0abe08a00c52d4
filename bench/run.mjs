// npm run bench: the performance report of issue 6, against the built package (dist/).
//
// Starts its own redis-server on a free loopback port (no persistence), runs the sections (one module
// each in sections/), prints one table and writes bench/results/<YYYY-MM-DD>.json. Every comparison is
// a ratio of two measurements taken next to each other (A/B/A/B…, order rotated per round), over
// BENCH_ROUNDS rounds: the table shows the median ratio and its spread (min–max), absolute numbers only
// next to their ratios. Every child (redis-server, redis-benchmark, the Nest apps) is stopped at the
// end, on Ctrl-C, on a failure and by a watchdog.
//
// The package's own rows (consume(), the guards, the HTTP apps) use the limiter's and the module's
// defaults, so its default function; every "bare FCALL" row calls the article's sliding_allow_v1, the
// function a team would load and call by hand; sections 7–9 call sliding_allow_v2 directly.
//
// Environment: BENCH_ROUNDS (an integer, at least 3: a median and its spread need three; default 3),
// BENCH_QUICK=1 (short durations, for trying the harness), BENCH_ONLY=consume,http (run only these
// sections, of: ceiling, consume, memory, hotKey, http — which also measures the stacked limits,
// table section 6 — guard, the guards alone without HTTP, table section "3 guard", and windowMemory,
// windowTime, windowCost: rate_limit_v2's log and bucketed window, table sections 7, 8 and 9; latency,
// the 1-connection latency a guard adds, section 10; scale, how cost grows with keys, limits, stacked
// limits and batch size, section 11, with SVG plots in bench/results/; cluster, a 3-master cluster
// against one Redis, section 12). BENCH_HTTP_ROUNDS: the HTTP section's rounds (default at least 7).
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { SECTIONS, settingsFromEnv, watchdogMs } from './lib/config.mjs';
import { BARE_FUNCTION, loadFunction } from './lib/decisions.mjs';
import { declaresOption } from './lib/declarations.mjs';
import { loadAverage, machine } from './lib/machine.mjs';
import { snapshotDist } from './lib/package-snapshot.mjs';
import { installCleanup, startRedis, stopAll } from './lib/processes.mjs';
import { createReport, log, printTable } from './lib/report.mjs';
import { WINDOW_FUNCTION } from './lib/windows.mjs';
import { ceiling } from './sections/ceiling.mjs';
import { consume } from './sections/consume.mjs';
import { guard } from './sections/guard.mjs';
import { cluster } from './sections/cluster.mjs';
import { hotKey } from './sections/hot-key.mjs';
import { http } from './sections/http.mjs';
import { latency } from './sections/latency.mjs';
import { memory } from './sections/memory.mjs';
import { scale } from './sections/scale.mjs';
import { windowCost } from './sections/window-cost.mjs';
import { windowMemory } from './sections/window-memory.mjs';
import { windowTime } from './sections/window-time.mjs';

const here = dirname(fileURLToPath(import.meta.url));
// Where the results (JSON) and the plots (SVG) of the scale and cluster sections go.
const resultsDir = join(here, 'results');
mkdirSync(resultsDir, { recursive: true });
const root = join(here, '..');
const require = createRequire(import.meta.url);
const Redis = require('ioredis').default;

// In the order they run; `timedAs` names the section in the results' sectionSeconds.
const RUN_ORDER = [
  { name: 'ceiling', run: ceiling },
  { name: 'consume', run: consume },
  { name: 'memory', run: memory },
  { name: 'hotKey', run: hotKey },
  { name: 'http', timedAs: 'http+stacked', run: http },
  { name: 'guard', run: guard },
  { name: 'windowMemory', run: windowMemory },
  { name: 'windowTime', run: windowTime },
  { name: 'windowCost', run: windowCost },
  { name: 'latency', run: latency },
  { name: 'scale', run: scale },
  { name: 'cluster', run: cluster },
];

// BENCH_ROUNDS and BENCH_ONLY are checked before anything starts.
const settings = settingsFromEnv();
installCleanup(watchdogMs(settings.rounds, settings.httpRounds));
const dist = await snapshotDist(root);
// The package under test; when its options declare blockCache, consume and hotKey add their blockCache variants.
const build = {
  dist,
  SlidingWindowLimiter: require(dist).SlidingWindowLimiter,
  defaultFunction: require(dist).DEFAULT_FUNCTION_NAME,
  hasBlockCache: declaresOption(dist, 'SlidingWindowLimiterOptions', 'blockCache'),
};
// The functions the rows measure, recorded with the results.
const functions = { package: build.defaultFunction, bareFcall: BARE_FUNCTION, windows: WINDOW_FUNCTION };
// Other work on the machine skews every number: the load average is recorded next to them.
const loadAtStart = loadAverage();

async function main() {
  const startedAt = performance.now();
  const { port, child } = await startRedis();
  log(`redis-server on 127.0.0.1:${port}`);
  const connect = (extra = {}) => new Redis({ host: '127.0.0.1', port, ...extra });
  const redis = {
    port,
    pid: child.pid,
    plain: connect(),
    autoPipelined: connect({ enableAutoPipelining: true }),
    stats: connect(),
  };
  await Promise.all([redis.plain.ping(), redis.autoPipelined.ping(), redis.stats.ping()]);
  // Load the libraries of every function the sections call, once (a limiter loads the library of its
  // function when it is missing): the default one, the bare FCALLs' and the windows sections'.
  for (const name of new Set(Object.values(functions)))
    await loadFunction(build.SlidingWindowLimiter, redis.plain, name);
  const redisVersion = (await redis.stats.info('server')).match(/redis_version:(\S+)/)[1];

  const report = createReport();
  const seconds = {};
  try {
    for (const { name, timedAs = name, run } of RUN_ORDER) {
      if (!settings.only.includes(name)) continue;
      const began = performance.now();
      await run({ settings, report, redis, build, resultsDir });
      seconds[timedAs] = Number(((performance.now() - began) / 1000).toFixed(1));
      log(`  (${timedAs}: ${seconds[timedAs]} s)`);
    }
  } finally {
    redis.plain.disconnect();
    redis.autoPipelined.disconnect();
    redis.stats.disconnect();
    await stopAll();
  }

  report.sortRows();
  const { rows, targets, results } = report;
  const date = new Date().toISOString().slice(0, 10);
  const { rounds, quick, only } = settings;
  const info = {
    date,
    machine: machine(root, redisVersion, loadAtStart),
    rounds,
    quick,
    sectionsRun: only,
    functions,
    totalSeconds: (performance.now() - startedAt) / 1000,
    sectionSeconds: seconds,
  };
  console.log(printTable(rows, info, settings, build.hasBlockCache));
  const failed = rows.filter((r) => r.result === 'FAIL').length;
  const passed = rows.filter((r) => r.result === 'PASS').length;
  console.log(`\ntargets: ${passed} PASS, ${failed} FAIL`);

  const dir = resultsDir;
  // A short or partial run never overwrites the full run of the day.
  const partial = only.length < SECTIONS.length ? `only-${only.join('-')}-` : '';
  const file = join(dir, `${quick ? 'quick-' : ''}${partial}${date}.json`);
  writeFileSync(`${file}.tmp`, `${JSON.stringify({ ...info, table: rows, targets, ...results }, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
  console.log(`results: ${file}`);
}

main().catch(async (error) => {
  console.error(error);
  await stopAll();
  process.exit(1);
});
