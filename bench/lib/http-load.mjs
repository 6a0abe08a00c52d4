// HTTP load on the Nest apps: autocannon runs, and what each adds up — 2xx responses, time, latencies,
// the CPU time of the app and of Redis, and the app's GC pauses — in one-second slices interleaved
// between apps, over rounds.
import { createRequire } from 'node:module';
import { askApp } from './apps.mjs';
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
 * One second of autocannon at `app`'s `GET /`, added to `sink` with the CPU time of the app and of
 * Redis (INFO cpu on `stats`, microsecond resolution) and the app's GC pauses over it.
 */
async function httpSlice(app, stats, sink, connections) {
  const gcBefore = await gcOf(app);
  const cpuBefore = cpuSecondsOf(app.child.pid);
  const redisCpuBefore = await redisCpuSeconds(stats);
  await autocannonRun(`http://127.0.0.1:${app.port}/`, { connections, seconds: 1 }, sink);
  sink.cpuSeconds += cpuSecondsOf(app.child.pid) - cpuBefore;
  sink.redisCpuSeconds += (await redisCpuSeconds(stats)) - redisCpuBefore;
  const gcAfter = await gcOf(app);
  sink.gcMs += gcAfter.pauseMs - gcBefore.pauseMs;
  sink.gcLongestMs = Math.max(sink.gcLongestMs, gcAfter.longestMs);
}

/**
 * `rounds` rounds of `seconds` one-second slices per app at `connections`, interleaved (as in
 * section 2): `samples[id][round]` = summary().
 */
export async function httpRounds(apps, stats, { rounds, seconds, connections }) {
  const ids = Object.keys(apps);
  const samples = Object.fromEntries(ids.map((id) => [id, []]));
  for (let round = 0; round < rounds; round++) {
    const sinks = Object.fromEntries(ids.map((id) => [id, httpSink()]));
    for (const id of interleaved(ids, seconds, round)) await httpSlice(apps[id], stats, sinks[id], connections);
    for (const id of ids) {
      const r = summary(sinks[id]);
      if (r.non2xx > 0 || r.errors > 0)
        log(`  warning: ${id} round ${round + 1}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      samples[id][round] = r;
    }
    log(`  round ${round + 1}/${rounds} done (${connections} connection${connections === 1 ? '' : 's'})`);
  }
  return samples;
}
