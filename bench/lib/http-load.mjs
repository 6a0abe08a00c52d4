// HTTP load on the Nest apps: autocannon runs, and what each adds up — 2xx responses, time, latencies,
// the CPU time of the app and of Redis, and the app's GC pauses — in one-second slices interleaved
// between apps, over rounds.
import { createRequire } from 'node:module';
import { askApp, startApps, stopApps } from './apps.mjs';
import { redisCpuSeconds } from './cpu.mjs';
import { interleaved, percentile } from './measure.mjs';
import { cpuSecondsOf } from './processes.mjs';
import { log } from './report.mjs';

const require = createRequire(import.meta.url);

/** A bucket that several autocannon runs add to: 2xx count, time, latencies of 2xx responses. */
function httpSink() {
  return {
    ok: 0,
    seconds: 0,
    cpuSeconds: 0,
    redisCpuSeconds: 0,
    gcMs: 0,
    gcLongestMs: 0,
    non2xx: 0,
    errors: 0,
    count: 0,
    latencies: new Float64Array(1_000_000),
  };
}

function summary(sink) {
  return {
    rps: sink.ok / sink.seconds,
    // The app's own CPU per answered request: steadier than requests/s on a shared machine.
    cpuMicros: (sink.cpuSeconds * 1e6) / sink.ok,
    // The app's and Redis' CPU per answered request together: what a request costs the machine.
    totalCpuMicros: ((sink.cpuSeconds + sink.redisCpuSeconds) * 1e6) / sink.ok,
    // Redis' CPU per answered request: the guard's cost that the app's CPU does not show.
    redisCpuMicros: (sink.redisCpuSeconds * 1e6) / sink.ok,
    // The app's garbage-collection pauses: every request in the app waits through them.
    gcMsPerSecond: sink.gcMs / sink.seconds,
    gcLongestMs: sink.gcLongestMs,
    ok: sink.ok,
    non2xx: sink.non2xx,
    errors: sink.errors,
    p50: percentile(sink.latencies, sink.count, 50),
    p99: percentile(sink.latencies, sink.count, 99),
  };
}

/** One autocannon run; `x-client-id` differs per connection, so each connection is one client. */
export async function autocannonRun(url, options, sink = httpSink()) {
  const autocannon = require('autocannon');
  let client = 0;
  const instance = autocannon({
    url,
    connections: options.connections,
    ...(options.amount ? { amount: options.amount } : { duration: options.seconds }),
    // Seconds a request may take before autocannon counts it as an error (its default: 10).
    ...(options.timeoutSeconds ? { timeout: options.timeoutSeconds } : {}),
    setupClient: (c) => c.setHeaders({ 'x-client-id': `c${client++}` }),
  });
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300 && sink.count < sink.latencies.length)
      sink.latencies[sink.count++] = responseTime;
  });
  const result = await instance;
  sink.ok += result['2xx'];
  sink.seconds += result.duration;
  sink.non2xx += result.non2xx;
  sink.errors += result.errors + result.timeouts;
  return summary(sink);
}

/** The GC pauses of an app in HTTP mode so far; `longestMs` since the previous call (see http-app.mjs). */
async function gcOf(app) {
  return (await askApp(app, { gc: true }, 10_000)).gc;
}

/**
 * One second of autocannon at `route.path` of `app`, added to `sink` with the CPU time of the app and
 * of Redis (INFO cpu on `stats`, microsecond resolution) and the app's GC pauses over it.
 */
async function httpSlice(app, path, stats, sink, connections) {
  const gcBefore = await gcOf(app);
  const cpuBefore = cpuSecondsOf(app.child.pid);
  const redisCpuBefore = await redisCpuSeconds(stats);
  await autocannonRun(`http://127.0.0.1:${app.port}${path}`, { connections, seconds: 1 }, sink);
  sink.cpuSeconds += cpuSecondsOf(app.child.pid) - cpuBefore;
  sink.redisCpuSeconds += (await redisCpuSeconds(stats)) - redisCpuBefore;
  const gcAfter = await gcOf(app);
  sink.gcMs += gcAfter.pauseMs - gcBefore.pauseMs;
  sink.gcLongestMs = Math.max(sink.gcLongestMs, gcAfter.longestMs);
}

/** `items` turned left by `by` places: the order the apps of round `by` start in. */
function rotated(items, by) {
  return items.map((_, i) => items[(i + by) % items.length]);
}

/**
 * `rounds` rounds of HTTP load at `connections` on `routes` (`{ id, app, path }`, `app` the id of one
 * of `configs`): per round, `seconds` one-second slices per route, interleaved (as in section 2).
 *
 * Every round starts the apps afresh (startApps with `appTarget`), in an order turned by one config
 * per round, and warms each route up for `warmupSeconds` first. Two processes of one and the same
 * app differed here by up to 9% in CPU per request over a whole run (where each lands: the machine's
 * cores, the heap's layout, what the JIT made of the warm-up), so apps kept for the whole run would
 * carry a bias of that size into every comparison; new processes each round turn it into round-to-round
 * noise, which the medians over rounds absorb.
 *
 * Returns `{ samples, unavailable, apps }`: `samples[routeId][round]` = summary(); `unavailable[configId]`
 * why a configuration is missing (it failed in the first round: its routes are left out); `apps` the
 * last round's apps, still running, for the caller to use and stop.
 */
export async function httpRounds(configs, routes, appTarget, stats, options) {
  const { rounds, seconds, connections, warmupSeconds } = options;
  const samples = {};
  let unavailable = {};
  let live = routes;
  let apps = {};
  for (let round = 0; round < rounds; round++) {
    if (round > 0) await stopApps(apps);
    const started = await startApps(rotated(configs, round), appTarget);
    apps = started.apps;
    if (round === 0) {
      unavailable = started.unavailable;
      live = routes.filter((route) => apps[route.app]);
      for (const route of live) samples[route.id] = [];
    } else {
      const missing = live.find((route) => !apps[route.app]);
      if (missing)
        throw new Error(
          `app "${missing.app}" failed to start in round ${round + 1}: ${started.unavailable[missing.app]}`,
        );
    }
    for (const route of live)
      await autocannonRun(`http://127.0.0.1:${apps[route.app].port}${route.path}`, {
        connections,
        seconds: warmupSeconds,
      });
    const sinks = Object.fromEntries(live.map((route) => [route.id, httpSink()]));
    for (const id of interleaved(
      live.map((route) => route.id),
      seconds,
      round,
    )) {
      const route = live.find((r) => r.id === id);
      await httpSlice(apps[route.app], route.path, stats, sinks[id], connections);
    }
    for (const route of live) {
      const r = summary(sinks[route.id]);
      if (r.non2xx > 0 || r.errors > 0)
        log(`  warning: ${route.id} round ${round + 1}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      samples[route.id][round] = r;
    }
    log(`  round ${round + 1}/${rounds} done (${connections} connection${connections === 1 ? '' : 's'})`);
  }
  return { samples, unavailable, apps };
}
