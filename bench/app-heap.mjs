// Bytes allocated per HTTP request of the benchmark's guarded app, counted by V8's sampling heap
// profiler, and the young-generation collections they cost: what a guarded request allocates beside a
// route that awaits one bare FCALL and one with the guard skipped, and how much of it is this
// package's own. Allocation is a steady figure where time is not: a route's bytes per request hardly
// move with the other work on the machine, and every byte is collected again, by pauses that every
// request in flight waits through (the tail of every route, see docs/performance.md).
// Not part of `npm run bench` (the profiler slows the app several times): run it on its own after a build.
//
//   node bench/app-heap.mjs        # 4 rounds; per route 10,000 requests profiled at 1 connection, 20,000 at 50
//   APP_HEAP_CONNECTIONS=50 APP_HEAP_REQUESTS_50=8000 APP_HEAP_ROUNDS=3 node bench/app-heap.mjs
//   node bench/app-heap.mjs bench/results/app-heap-<date>.json   # the tables of a saved run
//   BENCH_LABEL=after node bench/app-heap.mjs   # saved as app-heap-<date>-after.json
//
// Starts a Redis of its own and the `ours` configuration of http-app.mjs (the quick start's
// RateLimitModule.forRoot({ redis }), default options, + @SlidingLimit on GET /; GET /fcall:
// @SkipRateLimit(), the handler awaits one bare FCALL of the article's sliding_allow_v1 on a
// connection of its own; GET /skip:
// @SkipRateLimit(), nothing else). Per connection count (autocannon, one x-client-id per connection),
// warms every route up (APP_HEAP_WARMUP requests each), then runs two sets of rounds in which the
// routes take turns (the order turned by one per round), of requests / APP_HEAP_ROUNDS requests each:
//   - GC rounds: every collection's pause, from the app's `gc` performance entries, nothing else on.
//   - heap rounds: the sampling heap profiler on (HeapProfiler.startSampling through node:inspector,
//     a sample every APP_HEAP_INTERVAL bytes on average, objects the minor and the major GC collected
//     counted too), stopped after the requests. Not the GC rounds' requests: the profiler keeps a
//     handle per sample, which the collector then visits, so pauses measured with it on read long.
// Each sample's bytes go to the innermost JavaScript frame that has a URL: the package under test
// (the copy of dist/ the app loads), a dependency under node_modules, Node's own (`node:`), the bench
// app. Bytes per request: the median over the rounds (total and the package's own); the split by
// owner and the package's functions are means over every round. Young collections per 1,000
// requests and the median pause: over every round's GC phase together. Checks that each route made
// the FCALLs it should (a decision that fell back to the failure policy allocates differently).
// Prints Markdown and writes bench/results/app-heap-<date>.json.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { constants } from 'node:perf_hooks';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { askApp, HTTP_CONFIGS, startApps } from './lib/apps.mjs';
import { BARE_FUNCTION } from './lib/decisions.mjs';
import { autocannonRun } from './lib/http-load.mjs';
import { interleaved, median } from './lib/measure.mjs';
import { snapshotDist } from './lib/package-snapshot.mjs';
import { installCleanup, startRedis, stopAll } from './lib/processes.mjs';
import { commandCalls } from './lib/redis-stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const Redis = require('ioredis').default;
const ROUTES = ['/skip', '/', '/fcall'];
const PACKAGE = 'this package';
const LIMIT = 1_000_000;
const WINDOW_MS = 1_000;
// Kilobytes of 1,000 bytes, as the issue's target and the earlier figures in docs/performance.md.
const KB = 1000;
const TARGET_OWN_KB = 1.5;
const TARGET_GC_RATIO = 1.05;

if (process.argv[2]) {
  report(JSON.parse(readFileSync(process.argv[2], 'utf8')));
  process.exit(0);
}

const settings = readSettings(process.env);
// The build measured is the one snapshotted now: lib/ may change while the run goes on.
const build = buildOf();
installCleanup(2 * 60 * 60_000);
// Frames name the files Node loaded, symbolic links resolved (node_modules may be one).
const dist = realpathSync(await snapshotDist(join(here, '..')));
// The guard's function (the build's default) and the one GET /fcall calls, recorded with the results.
const functionNames = { functionName: require(dist).DEFAULT_FUNCTION_NAME, fcallFunction: BARE_FUNCTION };
const redis = await startRedis();
const stats = new Redis({ host: '127.0.0.1', port: redis.port });
const runs = [];
try {
  const ours = HTTP_CONFIGS.filter((config) => config.id === 'ours');
  const target = { redisPort: redis.port, limit: LIMIT, windowMs: WINDOW_MS, dist };
  const { apps, unavailable } = await startApps(ours, target);
  if (!apps.ours) throw new Error(`the guarded app did not start: ${unavailable.ours}`);
  for (const connections of settings.connections) runs.push(await measureAt(apps.ours, connections));
} finally {
  stats.disconnect();
  await stopAll();
}
const date = new Date().toISOString().slice(0, 10);
const saved = { date, build, ...functionNames, settings, runs };
writeFileSync(join(here, 'results', resultName('app-heap', date)), `${JSON.stringify(saved, null, 2)}\n`);
report(saved);

/** `<tool>-<date>.json`, or `<tool>-<date>-<BENCH_LABEL>.json`: a labelled run never overwrites another. */
function resultName(tool, date) {
  const label = process.env.BENCH_LABEL;
  return label ? `${tool}-${date}-${label}.json` : `${tool}-${date}.json`;
}

/** The commit the measured dist/ was built from, as far as git can tell (`+` when lib/ had changes). */
function buildOf() {
  const git = (...args) => execFileSync('git', args, { cwd: here, encoding: 'utf8' }).trim();
  return `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', '../lib') ? '+' : ''}`;
}

/** The run's settings from the environment; one the script cannot use stops it before it starts anything. */
function readSettings(env) {
  const integer = (name, fallback, min) => {
    const value = Number(env[name] ?? fallback);
    if (!Number.isInteger(value) || value < min)
      throw new Error(`${name} must be an integer ≥ ${min}, not ${env[name]}`);
    return value;
  };
  const connections = (env.APP_HEAP_CONNECTIONS ?? '1,50').split(',').map(Number);
  if (!connections.every((n) => Number.isInteger(n) && n >= 1))
    throw new Error(
      `APP_HEAP_CONNECTIONS must be connection counts separated by commas, not ${env.APP_HEAP_CONNECTIONS}`,
    );
  const perConnectionCount = (name, atOne, atMore) =>
    Object.fromEntries(connections.map((n) => [n, integer(`${name}_${n}`, n === 1 ? atOne : atMore, 100)]));
  return {
    connections,
    // Requests per route over all rounds, per connection count: under the profiler
    // (APP_HEAP_REQUESTS_<connections>), and in the GC rounds, which cost little time and count in
    // whole collections, one every 250-360 requests (APP_HEAP_GC_REQUESTS_<connections>).
    requests: perConnectionCount('APP_HEAP_REQUESTS', 10_000, 20_000),
    gcRequests: perConnectionCount('APP_HEAP_GC_REQUESTS', 40_000, 80_000),
    rounds: integer('APP_HEAP_ROUNDS', 4, 3),
    warmup: integer('APP_HEAP_WARMUP', 5_000, 0),
    samplingInterval: integer('APP_HEAP_INTERVAL', 128, 1),
  };
}

/**
 * Warm-up, then the rounds at `connections`, the GC phases' before any heap phase: stopping the
 * profiler leaves a full collection behind it, after which V8 shrinks the young generation, and
 * collections would come more often until it has grown back. `{ connections, gc: [...], heap: [...] }`,
 * one entry per round and route.
 */
async function measureAt(app, connections) {
  const perRound = (requests) => Math.ceil(requests[connections] / settings.rounds);
  for (const route of ROUTES) await load(app, route, connections, settings.warmup);
  const gcRequests = perRound(settings.gcRequests);
  const gc = await inRounds(connections, 'GC', (route) => gcPhase(app, route, connections, gcRequests));
  const heapRequests = perRound(settings.requests);
  const heap = await inRounds(connections, 'heap', (route) => heapPhase(app, route, connections, heapRequests));
  return { connections, gc, heap };
}

/** `phase(route)` for every route in every round, the routes' order turned by one each round. */
async function inRounds(connections, name, phase) {
  const results = [];
  for (let round = 0; round < settings.rounds; round++) {
    for (const route of interleaved(ROUTES, 1, round)) {
      const startedAt = Date.now();
      const result = await phase(route);
      results.push({ round, route, ...result });
      process.stderr.write(
        `${connections} conn., ${name} round ${round + 1}, GET ${route}: ${progress(result)} ` +
          `(${((Date.now() - startedAt) / 1000).toFixed(1)} s)\n`,
      );
    }
  }
  return results;
}

/** One phase's result in a few words, for the progress log. */
function progress(result) {
  if (result.pauses) return `${result.pauses.filter(isYoung).length} young GCs in ${result.requests} requests`;
  const perRequest = (bytes) => kb((bytes ?? 0) / result.requests);
  return `${perRequest(result.bytes)} per request, package ${perRequest(result.owners[PACKAGE])}`;
}

/**
 * `requests` requests at `route` (autocannon's `amount`: exactly that many), with the FCALLs Redis ran
 * meanwhile, checked (see checkFcalls()): `{ requests, fcalls }`. Any answer but a 2xx fails the run.
 */
async function load(app, route, connections, requests) {
  if (requests === 0) return { requests: 0, fcalls: 0 };
  const before = (await commandCalls(stats)).fcall ?? 0;
  // A request may wait long under the profiler on a busy host: a slow answer is not an error here.
  const result = await autocannonRun(`http://127.0.0.1:${app.port}${route}`, {
    connections,
    amount: requests,
    timeoutSeconds: 60,
  });
  const fcalls = ((await commandCalls(stats)).fcall ?? 0) - before;
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`GET ${route}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
  checkFcalls(route, connections, result.ok, fcalls);
  return { requests: result.ok, fcalls };
}

/** The app's GC pauses over `requests` requests: `{ requests, fcalls, pauses: [{ kind, ms }] }`. */
async function gcPhase(app, route, connections, requests) {
  await askApp(app, { gcLog: 'start' }, 10_000);
  const counts = await load(app, route, connections, requests);
  const { gcLog } = await askApp(app, { gcLog: 'stop' }, 10_000);
  return { ...counts, pauses: gcLog };
}

/**
 * The sampling heap profile of `requests` requests, attributed (see attribute()):
 * `{ requests, fcalls, bytes, owners, functions }`.
 */
async function heapPhase(app, route, connections, requests) {
  await askApp(app, { heapSampling: { samplingInterval: settings.samplingInterval } }, 10_000);
  const counts = await load(app, route, connections, requests);
  const { heapProfile } = await askApp(app, { heapSampling: 'stop' }, 300_000);
  return { ...counts, ...attribute(heapProfile) };
}

/**
 * Every request of GET / and GET /fcall makes one decision in Redis: GET /fcall one FCALL each, GET /
 * one each at one connection and at most one each at more (the limiter batches the decisions that
 * wait together); GET /skip none. Fewer means decisions fell back to the failure policy.
 */
function checkFcalls(route, connections, requests, fcalls) {
  const expected = {
    '/skip': [0, 0],
    '/fcall': [requests, requests],
    '/': [connections === 1 ? requests : 1, requests],
  };
  const [min, max] = expected[route];
  if (fcalls < min || fcalls > max)
    throw new Error(`GET ${route} at ${connections} connections: ${fcalls} FCALLs for ${requests} requests`);
}

/**
 * Splits a sampling heap profile's bytes by the innermost JavaScript frame with a URL of each
 * allocation: `{ bytes, owners: { owner: bytes }, functions: { 'name file:line': bytes } }`, the
 * functions those of the package under test only. Frames without a URL (V8's builtins, a native
 * call's pseudo-frame) pass the bytes to their caller.
 */
function attribute(tree) {
  const split = { bytes: 0, owners: {}, functions: {} };
  const walk = (node, frame) => {
    const own = node.callFrame.url ? node.callFrame : frame;
    if (node.selfSize > 0) {
      const owner = ownerOf(own?.url);
      split.bytes += node.selfSize;
      split.owners[owner] = (split.owners[owner] ?? 0) + node.selfSize;
      if (owner === PACKAGE) {
        const name = `${own.functionName || '(anonymous)'} ${packagePath(own.url)}:${own.lineNumber + 1}`;
        split.functions[name] = (split.functions[name] ?? 0) + node.selfSize;
      }
    }
    for (const child of node.children) walk(child, own);
  };
  walk(tree, null);
  return split;
}

/** Whose code a frame's URL is: the package under test, a dependency by name, Node's own, the bench app. */
function ownerOf(url) {
  if (!url) return '(no JavaScript frame)';
  if (url.startsWith('node:')) return 'Node.js (node:*)';
  const path = pathOf(url);
  if (path.startsWith(dist + sep)) return PACKAGE;
  const modules = `${sep}node_modules${sep}`;
  const at = path.lastIndexOf(modules);
  if (at >= 0) {
    const [scope, name] = path.slice(at + modules.length).split(sep);
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  return path.startsWith(here + sep) ? 'the bench app' : path;
}

/** A frame's file: CommonJS modules have a path for URL, ES modules a file: URL. */
function pathOf(url) {
  return url.startsWith('file:') ? fileURLToPath(url) : url;
}

/** A URL of the package under test as a path in dist/, as a developer finds it after `npm run build`. */
function packagePath(url) {
  return join('dist', relative(dist, pathOf(url)));
}

function isYoung(pause) {
  return pause.kind === constants.NODE_PERFORMANCE_GC_MINOR;
}

function kb(bytes) {
  return `${(bytes / KB).toFixed(1)} KB`;
}

/**
 * Prints the tables of a run (saved or just measured) and the two targets. Runs saved before the
 * functions were recorded used the development libraries' sliding_allow_v2 for both routes.
 */
function report({
  date,
  build,
  functionName = 'development sliding_allow_v2',
  fcallFunction = functionName,
  settings,
  runs,
}) {
  console.log(
    `Allocation per request, sampling heap profiler every ${settings.samplingInterval} bytes, collected ` +
      `objects included (${date}, build ${build}, guard ${functionName}, GET /fcall ${fcallFunction}; KB = 1,000 bytes; ` +
      `${settings.rounds} rounds per route):\n`,
  );
  for (const run of runs) reportRun(run, settings);
  console.log('Targets:');
  for (const run of runs) {
    const own = routeFigures(run, '/').ownKb;
    console.log(
      `- ${run.connections} conn.: package's own allocation per guarded request ${own.toFixed(2)} KB ` +
        `(target ≤ ${TARGET_OWN_KB} KB): ${own <= TARGET_OWN_KB ? 'PASS' : 'FAIL'}`,
    );
    const ratio = routeFigures(run, '/').youngPer1k / routeFigures(run, '/fcall').youngPer1k;
    console.log(
      `- ${run.connections} conn.: young GCs per request, GET / over GET /fcall ${ratio.toFixed(3)}× ` +
        `(target ≤ ${TARGET_GC_RATIO}×): ${ratio <= TARGET_GC_RATIO ? 'PASS' : 'FAIL'}`,
    );
  }
}

/** The per-route figures of one connection count: medians over rounds and pooled GC counts. */
function routeFigures(run, route) {
  const heap = run.heap.filter((r) => r.route === route);
  const gc = run.gc.filter((r) => r.route === route);
  const perRequest = (pick) => heap.map((r) => pick(r) / r.requests / KB);
  const totalKb = perRequest((r) => r.bytes);
  const sum = (rounds, pick) => rounds.reduce((total, r) => total + pick(r), 0);
  const gcRequests = sum(gc, (r) => r.requests);
  const young = gc.flatMap((r) => r.pauses.filter(isYoung).map((p) => p.ms));
  const pausesMs = sum(gc, (r) => sum(r.pauses, (p) => p.ms));
  return {
    heap,
    totalKb: median(totalKb),
    minKb: Math.min(...totalKb),
    maxKb: Math.max(...totalKb),
    ownKb: median(perRequest((r) => r.owners[PACKAGE] ?? 0)),
    fcallsPerRequest: sum(heap, (r) => r.fcalls) / sum(heap, (r) => r.requests),
    gcFcallsPerRequest: sum(gc, (r) => r.fcalls) / gcRequests,
    youngPer1k: (young.length * 1000) / gcRequests,
    youngMedianMs: young.length > 0 ? median(young) : NaN,
    pauseMsPer1k: (pausesMs * 1000) / gcRequests,
  };
}

/** `{ key: bytes per request }` over every round of `rounds`: the sums of `pick(round)` over their requests. */
function meanPerRequest(rounds, pick) {
  const requests = rounds.reduce((sum, r) => sum + r.requests, 0);
  const sums = {};
  for (const r of rounds) for (const [key, bytes] of Object.entries(pick(r))) sums[key] = (sums[key] ?? 0) + bytes;
  return Object.fromEntries(Object.entries(sums).map(([key, bytes]) => [key, bytes / requests]));
}

/** The three tables of one connection count: per route, by owner, and the package's functions. */
function reportRun(run, settings) {
  const figures = Object.fromEntries(ROUTES.map((route) => [route, routeFigures(run, route)]));
  const count = (requests) => requests[run.connections].toLocaleString('en');
  console.log(
    `### ${run.connections} connection${run.connections === 1 ? '' : 's'}: ${count(settings.requests)} requests ` +
      `per route under the profiler, ${count(settings.gcRequests)} in the GC rounds\n`,
  );
  console.log(
    "| route | allocated per request (median; rounds) | package's own | FCALLs per request (heap; GC rounds) | " +
      'young GCs per 1,000 requests | young GC pause (median) | GC pause time per 1,000 requests (all kinds) |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const route of ROUTES) {
    const f = figures[route];
    console.log(
      `| GET ${route} | ${f.totalKb.toFixed(1)} KB (${f.minKb.toFixed(1)}–${f.maxKb.toFixed(1)}) | ` +
        `${f.ownKb.toFixed(2)} KB | ${f.fcallsPerRequest.toFixed(2)}; ${f.gcFcallsPerRequest.toFixed(2)} | ` +
        `${f.youngPer1k.toFixed(2)} | ` +
        `${f.youngMedianMs.toFixed(2)} ms | ${f.pauseMsPer1k.toFixed(1)} ms |`,
    );
  }
  const more = (route) => (figures['/'].totalKb - figures[route].totalKb).toFixed(1);
  const functions = (route) => meanPerRequest(figures[route].heap, (r) => r.functions);
  const layers = Object.entries(byLayer(functions('/'))).sort(([, a], [, b]) => b - a);
  console.log(
    `\nGET / allocates ${more('/fcall')} KB per request more than GET /fcall and ${more('/skip')} KB more than ` +
      `GET /skip; the package's own by folder of dist/ (means): ` +
      `${layers.map(([layer, bytes]) => `${layer} ${(bytes / KB).toFixed(2)} KB`).join(', ')}.`,
  );
  reportTable(
    'whose code allocated (innermost frame with a URL), KB per request',
    Object.fromEntries(ROUTES.map((route) => [route, meanPerRequest(figures[route].heap, (r) => r.owners)])),
    (value) => (value / KB).toFixed(2),
    10,
  );
  reportTable(
    "the package's functions, bytes per request",
    Object.fromEntries(ROUTES.map((route) => [route, functions(route)])),
    (value) => value.toFixed(0),
    15,
  );
  console.log('\n(A function V8 inlined counts to the function it was inlined into, its file and line.)\n');
}

/** `{ folder: bytes }` of `{ 'name dist/<folder>/file.js:line': bytes }`: which layer of the package allocated. */
function byLayer(functions) {
  const layers = {};
  for (const [name, bytes] of Object.entries(functions)) {
    const [, folder] = / dist\/([^/]+)\/\S+:\d+$/.exec(name) ?? [];
    const layer = folder ? `${folder}/` : 'dist/';
    layers[layer] = (layers[layer] ?? 0) + bytes;
  }
  return layers;
}

/** A table of `rows × routes` (`byRoute[route][row]`), rows by GET /'s value, the largest `top` only. */
function reportTable(title, byRoute, format, top) {
  const rows = [...new Set(ROUTES.flatMap((route) => Object.keys(byRoute[route])))];
  const value = (route, row) => byRoute[route][row] ?? 0;
  rows.sort((a, b) => value('/', b) - value('/', a) || value('/fcall', b) - value('/fcall', a));
  console.log(`\n| ${title} | ${ROUTES.map((route) => `GET ${route}`).join(' | ')} |`);
  console.log(`|---|${ROUTES.map(() => '---').join('|')}|`);
  for (const row of rows.slice(0, top))
    console.log(`| ${row.replaceAll('|', '\\|')} | ${ROUTES.map((route) => format(value(route, row))).join(' | ')} |`);
  if (rows.length > top) console.log(`| (${rows.length - top} more) | ${ROUTES.map(() => '').join(' | ')} |`);
}
