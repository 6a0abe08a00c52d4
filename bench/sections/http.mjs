// 3. HTTP: the same route with no guard, our guard (on the module's connection and on the user's
//    ioredis client) and @nestjs/throttler + two Redis storages, each app in its own process, under
//    autocannon at 50 connections, interleaved in 1-second slices, every app started afresh each
//    round (see httpRounds); beside each guarded GET / its app's GET /skip, the same route with the
//    guard skipped (@SkipRateLimit(), @SkipThrottle()) in the same process. What a guard costs a real route:
//    requests/s, latency (p50, p99), app and Redis CPU per request, GC pauses. The guard's added CPU
//    per request (guarded route minus its app's GET /skip, app + Redis, per round) is the figure
//    compared with @nestjs/throttler; requests/s against no guard is judged on
//    settings.httpRounds rounds (BENCH_HTTP_ROUNDS, at least 7 by default in a full run). The
//    1-connection latency lives in its own section now (latency.mjs, sub-millisecond clock). Then, on
//    the last round's apps, the stacked limits of table section 6 (stacked.mjs).
import { HTTP_CONFIGS, stopApps } from '../lib/apps.mjs';
import { httpRounds } from '../lib/http-load.mjs';
import { compact, metricsOf, ratios, spread } from '../lib/measure.mjs';
import { log } from '../lib/report.mjs';
import { stacked } from './stacked.mjs';

/** The configurations whose guard is also measured against its own app's GET /skip. */
const WITH_SKIP_ROUTE = ['ours', 'nest-lab', 'nestjs-redis'];

export async function http(bench) {
  const { settings, report, redis, build } = bench;
  const { httpRounds: rounds, http: httpSettings } = settings;
  log(
    `3/6 HTTP: autocannon, ${httpSettings.connections} connections, ${httpSettings.seconds} s × ${rounds} rounds per configuration`,
  );
  // Every configuration's GET /, and for each guard compared GET /skip of the same app: the route
  // with the guard skipped its own way (@SkipRateLimit(), @SkipThrottle()), in the same process.
  const routes = [
    ...HTTP_CONFIGS.map((config) => ({ id: config.id, app: config.id, path: '/' })),
    ...WITH_SKIP_ROUTE.map((id) => ({ id: `${id}-skip`, app: id, path: '/skip' })),
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
  // What a guard adds over its own app's GET /skip, app + Redis CPU per request, per round: the
  // guarded and the unguarded route in one process, so no difference between two processes in it.
  const addedInProcess = (id) => {
    const skip = metric(`${id}-skip`, 'totalCpuMicros');
    return metric(id, 'totalCpuMicros').map((v, i) => v - skip[i]);
  };
  const hasSkip = (id) => Boolean(samples[id] && samples[`${id}-skip`]);
  for (const id of WITH_SKIP_ROUTE.filter(hasSkip)) {
    const skip = `${id}-skip`;
    const { label } = HTTP_CONFIGS.find((c) => c.id === id);
    report.row('3 http', `${label} / the same app's route without it (GET /skip), requests/s`, {
      spread: spread(ratios(metric(id, 'rps'), metric(skip, 'rps'))),
      absolute: `${skip} ${fmt(skip)}`,
    });
    report.row('3 http', `${label} − the same app's route without it: added app + Redis CPU per request`, {
      spread: spread(addedInProcess(id)),
      unit: 'µs',
      digits: 1,
      absolute: `app ${(med(id, 'cpuMicros') - med(skip, 'cpuMicros')).toFixed(1)} + Redis ${(med(id, 'redisCpuMicros') - med(skip, 'redisCpuMicros')).toFixed(1)} µs (difference of medians)`,
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
    // Gated: each guard over its own app's GET /skip (one process each); beside it, over the unguarded
    // app, whose process differs from the guarded one's.
    const addedRow = (oursRounds, theirsRounds, over, gated) => {
      const ours = spread(oursRounds);
      const theirs = spread(theirsRounds);
      const ratio = ours.median / theirs.median;
      const perRound = spread(ratios(oursRounds, theirsRounds));
      report.row('3 http', `our guard / ${config.label}, added app + Redis CPU per request over ${over}`, {
        value: ratio,
        absolute:
          `ours +${ours.median.toFixed(1)} µs (${ours.min.toFixed(0)}–${ours.max.toFixed(0)}) vs ` +
          `${config.id} +${theirs.median.toFixed(1)} µs (${theirs.min.toFixed(0)}–${theirs.max.toFixed(0)}), ` +
          `medians of per-round differences; per-round ratios ${perRound.min.toFixed(2)}–${perRound.max.toFixed(2)}`,
        ...(gated ? { target: '≤ 0.80×', pass: theirs.median > 0 && ratio <= 0.8 } : {}),
      });
      return { ratio, ours, theirs, perRound };
    };
    const inProcess = hasSkip('ours') && hasSkip(config.id);
    targets[config.id] = {
      addedCpu: inProcess
        ? addedRow(addedInProcess('ours'), addedInProcess(config.id), 'the same app without it', true)
        : undefined,
      addedCpuOverNone: addedRow(added('ours'), added(config.id), 'the unguarded app', !inProcess),
    };
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
