// 3. HTTP: the same route with no guard, our guard (on the module's connection and on the user's
//    ioredis client) and @nestjs/throttler + two Redis storages, each app in its own process, under
//    autocannon at 50 connections, interleaved in 1-second slices, every app started afresh each
//    round (see httpRounds); beside them the guarded app's GET /skip, the same route with
//    @SkipRateLimit() in the same process. What a guard costs a real route:
//    requests/s, latency (p50, p99), app and Redis CPU per request, GC pauses. The guard's added CPU
//    per request (guarded route minus the same route without a guard, app + Redis, per round) is the
//    figure compared with @nestjs/throttler; requests/s against no guard is judged on
//    settings.httpRounds rounds (BENCH_HTTP_ROUNDS, at least 7 by default in a full run). The
//    1-connection latency lives in its own section now (latency.mjs, sub-millisecond clock). Then, on
//    the last round's apps, the stacked limits of table section 6 (stacked.mjs).
import { HTTP_CONFIGS, stopApps } from '../lib/apps.mjs';
import { httpRounds } from '../lib/http-load.mjs';
import { compact, metricsOf, ratios, spread } from '../lib/measure.mjs';
import { log } from '../lib/report.mjs';
import { stacked } from './stacked.mjs';

export async function http(bench) {
  const { settings, report, redis, build } = bench;
  const { httpRounds: rounds, http: httpSettings } = settings;
  log(
    `3/6 HTTP: autocannon, ${httpSettings.connections} connections, ${httpSettings.seconds} s × ${rounds} rounds per configuration`,
  );
  // Every configuration's GET /, and the guarded app's GET /skip (@SkipRateLimit(), nothing else):
  // the same route without the guard in the same process.
  const routes = [
    ...HTTP_CONFIGS.map((config) => ({ id: config.id, app: config.id, path: '/' })),
    { id: 'ours-skip', app: 'ours', path: '/skip' },
  ];
  const { samples, unavailable, apps } = await httpRounds(
    HTTP_CONFIGS,
    routes,
    { redisPort: redis.port, dist: build.dist, limit: httpSettings.limit, windowMs: httpSettings.windowMs },
    redis.stats,
    {
      rounds,
      seconds: httpSettings.seconds,
      connections: httpSettings.connections,
      warmupSeconds: httpSettings.warmupSeconds,
    },
  );
  report.record('http', {
    settings: { ...httpSettings, rounds },
    key: 'header x-client-id, one value per autocannon connection',
    samples,
    unavailable,
  });

  const atLoad = metricsOf(samples);
  const { metric, med } = atLoad;
  // `id` minus `other` in latency percentiles, round by round.
  const latencyRows = (id, other, label, percentiles = ['p99']) => {
    for (const p of percentiles) {
      const others = metric(other, p);
      report.row('3 http', `${label}, ${p} latency, ${httpSettings.connections} connections`, {
        spread: spread(metric(id, p).map((v, i) => v - others[i])),
        unit: 'ms',
        digits: 2,
        absolute: `${id} ${med(id, p).toFixed(2)} ms vs ${other} ${med(other, p).toFixed(2)} ms`,
      });
    }
  };
  const cpuParts = (x) =>
    `${x} ${med(x, 'cpuMicros').toFixed(0)} + ${med(x, 'redisCpuMicros').toFixed(0)} µs (app + Redis)`;
  const cpuWithRedisRow = (id, other, label) =>
    report.row('3 http', `${label}, app + Redis CPU per request`, {
      spread: spread(ratios(metric(id, 'totalCpuMicros'), metric(other, 'totalCpuMicros'))),
      absolute: `${cpuParts(id)} vs ${cpuParts(other)}`,
    });
  // What a guard adds to the route, app + Redis CPU per request: guarded minus unguarded, per round.
  const added = (id) => {
    const none = metric('none', 'totalCpuMicros');
    return metric(id, 'totalCpuMicros').map((v, i) => v - none[i]);
  };
  const targets = {};
  const fmt = (id) =>
    `${compact(med(id, 'rps'))} rps at ${med(id, 'totalCpuMicros').toFixed(0)} µs app + Redis CPU per request, ` +
    `p50 ${med(id, 'p50').toFixed(2)} / p99 ${med(id, 'p99').toFixed(2)} ms`;
  if (samples.none && samples.ours) {
    const vsNone = spread(ratios(metric('ours', 'rps'), metric('none', 'rps')));
    targets.vsNone = vsNone;
    report.row('3 http', `our guard / no guard, requests/s (${rounds} rounds)`, {
      spread: vsNone,
      absolute: `ours ${fmt('ours')}; none ${fmt('none')}`,
      target: rounds >= 7 ? '≥ 0.90×' : '≥ 0.90× (≥ 7 rounds)',
      pass: rounds >= 7 ? vsNone.median >= 0.9 : undefined,
    });
    latencyRows('ours', 'none', 'our guard − no guard', ['p99', 'p50']);
    report.row('3 http', 'our guard / no guard, app CPU per request', {
      spread: spread(ratios(metric('ours', 'cpuMicros'), metric('none', 'cpuMicros'))),
      absolute: `${med('ours', 'cpuMicros').toFixed(0)} µs vs ${med('none', 'cpuMicros').toFixed(0)} µs`,
    });
    cpuWithRedisRow('ours', 'none', 'our guard / no guard');
    report.row('3 http', 'our guard − no guard: added app + Redis CPU per request', {
      spread: spread(added('ours')),
      unit: 'µs',
      digits: 1,
      absolute: `app ${(med('ours', 'cpuMicros') - med('none', 'cpuMicros')).toFixed(1)} + Redis ${(med('ours', 'redisCpuMicros') - med('none', 'redisCpuMicros')).toFixed(1)} µs (difference of medians)`,
    });
    const gcPauses = (id) =>
      `${id} ${med(id, 'gcMsPerSecond').toFixed(0)} ms/s (longest ${med(id, 'gcLongestMs').toFixed(1)} ms)`;
    report.row('3 http', 'our guard / no guard, app GC pauses per second of load', {
      spread: spread(ratios(metric('ours', 'gcMsPerSecond'), metric('none', 'gcMsPerSecond'))),
      absolute: `${gcPauses('ours')} vs ${gcPauses('none')}`,
    });
  } else {
    report.row('3 http', 'our guard / no guard', {
      note: unavailable.ours ?? unavailable.none,
      pass: false,
      target: '≥ 0.90×',
    });
  }
  // The guard against the same route without it in the same process: no second process in between.
  if (samples.ours && samples['ours-skip']) {
    report.row('3 http', 'our guard / @SkipRateLimit() route of the same app, requests/s', {
      spread: spread(ratios(metric('ours', 'rps'), metric('ours-skip', 'rps'))),
      absolute: `ours-skip ${fmt('ours-skip')}`,
    });
    const oursOverSkip = metric('ours', 'totalCpuMicros').map((v, i) => v - metric('ours-skip', 'totalCpuMicros')[i]);
    report.row('3 http', 'our guard − @SkipRateLimit() route of the same app: added app + Redis CPU per request', {
      spread: spread(oursOverSkip),
      unit: 'µs',
      digits: 1,
      absolute: `app ${(med('ours', 'cpuMicros') - med('ours-skip', 'cpuMicros')).toFixed(1)} + Redis ${(med('ours', 'redisCpuMicros') - med('ours-skip', 'redisCpuMicros')).toFixed(1)} µs (difference of medians)`,
    });
  }
  if (samples['ours-client'] && samples.ours) {
    report.row('3 http', "our guard: user's client / module's connection, requests/s", {
      spread: spread(ratios(metric('ours-client', 'rps'), metric('ours', 'rps'))),
      absolute: `ours-client ${fmt('ours-client')}`,
    });
    cpuWithRedisRow('ours-client', 'ours', "our guard: user's client / module's connection");
  }
  for (const config of HTTP_CONFIGS.filter((c) => c.packages.length > 0)) {
    if (!samples[config.id] || !samples.ours || !samples.none) {
      report.row('3 http', `our guard / ${config.label}`, {
        note: unavailable[config.id] ?? unavailable.ours ?? unavailable.none,
        target: '≤ 0.80×',
        pass: false,
      });
      continue;
    }
    // A difference of two noisy figures can come out near zero or below in one round, where a ratio
    // of it means nothing: the gated value is the ratio of the two added costs' medians over the
    // rounds (each a per-round difference, measured interleaved); the per-round ratios stand beside it.
    const oursAdded = spread(added('ours'));
    const theirsAdded = spread(added(config.id));
    const addedRatio = oursAdded.median / theirsAdded.median;
    const perRound = spread(ratios(added('ours'), added(config.id)));
    targets[config.id] = { addedCpu: { ratio: addedRatio, ours: oursAdded, theirs: theirsAdded, perRound } };
    report.row('3 http', `our guard / ${config.label}, added app + Redis CPU per request`, {
      value: addedRatio,
      absolute:
        `ours +${oursAdded.median.toFixed(1)} µs (${oursAdded.min.toFixed(0)}–${oursAdded.max.toFixed(0)}) vs ` +
        `${config.id} +${theirsAdded.median.toFixed(1)} µs (${theirsAdded.min.toFixed(0)}–${theirsAdded.max.toFixed(0)}) ` +
        `over no guard, medians of per-round differences; per-round ratios ${perRound.min.toFixed(2)}–${perRound.max.toFixed(2)}`,
      target: '≤ 0.80×',
      pass: theirsAdded.median > 0 && addedRatio <= 0.8,
    });
    cpuWithRedisRow('ours', config.id, `our guard / ${config.label}`);
    const vs = spread(ratios(metric('ours', 'rps'), metric(config.id, 'rps')));
    targets[config.id].rps = vs;
    report.row('3 http', `our guard / ${config.label}, requests/s`, {
      spread: vs,
      absolute: `${config.id} ${fmt(config.id)}`,
    });
    latencyRows('ours', config.id, `our guard − ${config.label}`);
    report.row('3 http', `${config.label} / no guard, requests/s`, {
      spread: spread(ratios(metric(config.id, 'rps'), metric('none', 'rps'))),
    });
  }

  // 6. Stacked limits, on the same apps before they stop.
  targets.stacked = await stacked(bench, apps, unavailable);
  await stopApps(apps);
  report.target('http', targets);
}
