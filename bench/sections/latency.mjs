// 10. The latency a guard adds, at 1 connection: a closed loop (one request at a time, no queueing)
//     timed with process.hrtime, so the ~0.1 ms of one Redis round trip shows and the tail reaches
//     p99.9. Routes, interleaved in slices per round: the unguarded app's GET /, the guarded app's
//     GET /, and in the guarded app three references with @SkipRateLimit(): GET /fcall, whose handler
//     awaits one bare FCALL (the article's sliding_allow_v1) on a connection of its own, GET /ping, one PING,
//     and GET /skip, nothing else. The @nestjs/throttler apps' GET / for comparison. "Added" = route
//     minus the route without a guard, per round and percentile: in the guarded app its GET /skip
//     (one process, so no difference between two processes in it), for the other apps the unguarded
//     app's GET /. Target: the guard adds at most 1.1× what the FCALL route adds, at p50 and at p99.
//     App + Redis CPU per request stands beside every route.
import { HTTP_CONFIGS, startApps, stopApps } from '../lib/apps.mjs';
import { closedLoopClient, PERCENTILES, percentilesMicros } from '../lib/closed-loop.mjs';
import { redisCpuSeconds } from '../lib/cpu.mjs';
import { interleaved, median, ratios, spread } from '../lib/measure.mjs';
import { cpuSecondsOf } from '../lib/processes.mjs';
import { log } from '../lib/report.mjs';
import { createHistogram } from 'node:perf_hooks';

/** The routes: app configuration, path, label. */
const ROUTES = [
  { id: 'none', app: 'none', path: '/', label: 'no guard' },
  { id: 'ours', app: 'ours', path: '/', label: 'our guard' },
  { id: 'skip', app: 'ours', path: '/skip', label: 'the guarded app, GET /skip (@SkipRateLimit(), no Redis)' },
  { id: 'fcall', app: 'ours', path: '/fcall', label: 'one bare FCALL in the handler (@SkipRateLimit)' },
  { id: 'ping', app: 'ours', path: '/ping', label: 'one PING in the handler (@SkipRateLimit)' },
  { id: 'nest-lab', app: 'nest-lab', path: '/', label: '@nestjs/throttler + @nest-lab/throttler-storage-redis' },
  { id: 'nestjs-redis', app: 'nestjs-redis', path: '/', label: '@nestjs/throttler + @nestjs-redis/throttler-storage' },
];
const TARGET = 1.1;
const signed = (n) => `${n >= 0 ? '+' : ''}${n.toFixed(0)}`;

export async function latency({ settings, report, redis, build }) {
  const { rounds, latency: l, http: httpSettings } = settings;
  log(`10 latency at 1 connection: closed loop, hrtime, ${l.slices} × ${l.sliceMs} ms per route and round`);
  const configs = HTTP_CONFIGS.filter((c) => ROUTES.some((r) => r.app === c.id));
  const { apps, unavailable } = await startApps(configs, {
    redisPort: redis.port,
    dist: build.dist,
    limit: httpSettings.limit,
    windowMs: httpSettings.windowMs,
  });
  const routes = ROUTES.filter((r) => apps[r.app]);
  const clients = Object.fromEntries(
    routes.map((r) => [
      r.id,
      closedLoopClient(`http://127.0.0.1:${apps[r.app].port}${r.path}`, { 'x-client-id': 'c0' }),
    ]),
  );
  const samples = Object.fromEntries(routes.map((r) => [r.id, []]));
  try {
    for (const r of routes) await clients[r.id].run(l.warmupMs);
    for (let round = 0; round < rounds; round++) {
      const sums = Object.fromEntries(
        routes.map((r) => [r.id, { histogram: createHistogram(), ok: 0, failed: 0, seconds: 0, app: 0, redis: 0 }]),
      );
      for (const id of interleaved(
        routes.map((r) => r.id),
        l.slices,
        round,
      )) {
        const route = routes.find((r) => r.id === id);
        const pid = apps[route.app].child.pid;
        const sum = sums[id];
        const appBefore = cpuSecondsOf(pid);
        const redisBefore = await redisCpuSeconds(redis.stats);
        const r = await clients[id].run(l.sliceMs, sum.histogram);
        sum.redis += (await redisCpuSeconds(redis.stats)) - redisBefore;
        sum.app += cpuSecondsOf(pid) - appBefore;
        sum.ok += r.ok;
        sum.failed += r.failed;
        sum.seconds += r.seconds;
      }
      for (const r of routes) {
        const sum = sums[r.id];
        if (sum.failed > 0) log(`  warning: ${r.id} round ${round + 1}: ${sum.failed} responses not 2xx`);
        samples[r.id][round] = {
          ...percentilesMicros(sum.histogram),
          requests: sum.ok,
          perSecond: sum.ok / sum.seconds,
          appCpuMicros: (sum.app * 1e6) / sum.ok,
          redisCpuMicros: (sum.redis * 1e6) / sum.ok,
        };
      }
      log(`  round ${round + 1}/${rounds} done`);
    }
  } finally {
    for (const client of Object.values(clients)) client.close();
    await stopApps(apps);
  }
  report.record('latency', { settings: l, routes, samples, unavailable });
  if (!samples.skip || !samples.ours || !samples.fcall) {
    report.row('10 latency', 'our guard / FCALL route, added latency', {
      note: unavailable.ours,
      target: `≤ ${TARGET}×`,
      pass: false,
    });
    return;
  }

  const of = (id, name) => samples[id].map((s) => s[name]);
  // What a route adds over `base`, per round: the guarded app's routes over its GET /skip (the same
  // process: no difference between two processes in it), the other apps' over the unguarded app.
  const addedOf = (id, p, base = 'skip') => of(id, p).map((v, i) => v - of(base, p)[i]);
  const targets = {};
  // Per route: its percentiles and CPU (medians), then what it adds over the route without a guard.
  for (const r of routes) {
    const line = PERCENTILES.map(([p]) => `${p} ${median(of(r.id, p)).toFixed(0)}`).join(', ');
    const cpu = `${median(of(r.id, 'appCpuMicros')).toFixed(0)} + ${median(of(r.id, 'redisCpuMicros')).toFixed(1)} µs`;
    report.row('10 latency', `${r.label}: latency p50, p90, p99, p99.9 (µs)`, {
      spread: spread(of(r.id, 'p50')),
      unit: 'µs',
      digits: 0,
      absolute: `${line} µs; ${Math.round(median(of(r.id, 'perSecond')))} req/s; app + Redis CPU ${cpu} per request`,
    });
  }
  // Added latency per round (route minus the unguarded route, same round); a difference can come out
  // near zero or below in one round, where a ratio of it means nothing, so the gated value is the ratio
  // of the medians of the per-round differences, with the per-round ratios' range beside it.
  for (const [p] of PERCENTILES) {
    const ours = spread(addedOf('ours', p));
    const fcall = spread(addedOf('fcall', p));
    const ratio = ours.median / fcall.median;
    const perRound = spread(ratios(addedOf('ours', p), addedOf('fcall', p)));
    const gated = p === 'p50' || p === 'p99';
    if (gated) targets[p] = { ratio, ours, fcall, perRound };
    // The guarded app's other routes over its GET /skip, the other apps' over the unguarded app.
    const baseOf = (r) => (r.app === 'ours' ? 'skip' : 'none');
    const others = routes
      .filter((r) => !['none', 'skip', 'ours', 'fcall'].includes(r.id) && samples[baseOf(r)])
      .map((r) => `${r.id} ${signed(spread(addedOf(r.id, p, baseOf(r))).median)} (over ${baseOf(r)})`)
      .join(', ');
    report.row('10 latency', `our guard / FCALL route, latency added over GET /skip of the same app, ${p}`, {
      value: ratio,
      absolute:
        `ours ${signed(ours.median)} µs (${ours.min.toFixed(0)}–${ours.max.toFixed(0)}) vs fcall ${signed(fcall.median)} µs ` +
        `(${fcall.min.toFixed(0)}–${fcall.max.toFixed(0)}); per-round ratios ${perRound.min.toFixed(2)}–${perRound.max.toFixed(2)}; ${others} µs`,
      ...(gated ? { target: `≤ ${TARGET}×`, pass: fcall.median > 0 && ratio <= TARGET } : {}),
    });
  }
  report.target('latency', targets);
}
