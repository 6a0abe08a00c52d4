// 3. HTTP: the same route with no guard, our guard (on the module's connection and on the user's
//    ioredis client) and @nestjs/throttler + two Redis storages, each app in its own process, under
//    autocannon at 50 connections and again at 1. What a guard costs a real route: requests/s,
//    latency (p50, p99), app and Redis CPU per request, GC pauses. Then, on the same apps, the
//    stacked limits of table section 6 (stacked.mjs).
import { HTTP_CONFIGS, startApps, stopApps } from '../lib/apps.mjs';
import { autocannonRun, httpRounds } from '../lib/http-load.mjs';
import { compact, metricsOf, ratios, spread } from '../lib/measure.mjs';
import { log } from '../lib/report.mjs';
import { stacked } from './stacked.mjs';

export async function http(bench) {
  const { settings, report, redis, build } = bench;
  const { rounds, http: httpSettings, oneConnection: oneConnectionSettings } = settings;
  log(
    `3/6 HTTP: autocannon, ${httpSettings.connections} connections, ${httpSettings.seconds} s × ${rounds} rounds per configuration`,
  );
  const { apps, unavailable } = await startApps(HTTP_CONFIGS, {
    redisPort: redis.port,
    dist: build.dist,
    limit: httpSettings.limit,
    windowMs: httpSettings.windowMs,
  });
  const ids = Object.keys(apps);
  for (const id of ids)
    await autocannonRun(`http://127.0.0.1:${apps[id].port}/`, {
      connections: httpSettings.connections,
      seconds: httpSettings.warmupSeconds,
    });
  const samples = await httpRounds(apps, redis.pid, {
    rounds,
    seconds: httpSettings.seconds,
    connections: httpSettings.connections,
  });
  log(`  the same routes with 1 connection, ${oneConnectionSettings.seconds} s × ${rounds} rounds per configuration`);
  // The user's-client variant only repeats `ours` here; left out to keep the run short.
  const single = Object.fromEntries(Object.entries(apps).filter(([id]) => id !== 'ours-client'));
  const oneConnection = await httpRounds(single, redis.pid, {
    rounds,
    seconds: oneConnectionSettings.seconds,
    connections: 1,
  });
  report.record('http', {
    settings: { ...httpSettings, oneConnectionSeconds: oneConnectionSettings.seconds },
    key: 'header x-client-id, one value per autocannon connection',
    samples,
    oneConnection,
    unavailable,
  });

  const atLoad = metricsOf(samples);
  const { metric, med } = atLoad;
  const one = metricsOf(oneConnection);
  // `id` minus `other` in latency percentiles, round by round, from `m` = metricsOf(…); returns them.
  const latencyRows = (
    m,
    id,
    other,
    label,
    { percentiles = ['p99'], suffix = `, ${httpSettings.connections} connections`, target = false } = {},
  ) =>
    Object.fromEntries(
      percentiles.map((p) => {
        const others = m.metric(other, p);
        const difference = spread(m.metric(id, p).map((v, i) => v - others[i]));
        report.row('3 http', `${label}, ${p} latency${suffix}`, {
          spread: difference,
          unit: 'ms',
          digits: 2,
          absolute: `${id} ${m.med(id, p).toFixed(2)} ms vs ${other} ${m.med(other, p).toFixed(2)} ms`,
          ...(target && p === 'p99' ? { target: '≤ +1 ms', pass: difference.median <= 1 } : {}),
        });
        return [p, difference];
      }),
    );
  // The app's and Redis' CPU per request together: what a request costs the machine, load generator aside.
  const cpuWithRedis = (id) => {
    const redisCpu = metric(id, 'redisCpuMicros');
    return metric(id, 'cpuMicros').map((app, i) => app + redisCpu[i]);
  };
  const cpuWithRedisRow = (id, other, label) => {
    const parts = (x) => `${x} ${med(x, 'cpuMicros').toFixed(0)} + ${med(x, 'redisCpuMicros').toFixed(0)} µs`;
    report.row('3 http', `${label}, app + Redis CPU per request`, {
      spread: spread(ratios(cpuWithRedis(id), cpuWithRedis(other))),
      absolute: `${parts(id)} vs ${parts(other)}`,
    });
  };
  const targets = {};
  const fmt = (id) =>
    `${compact(med(id, 'rps'))} rps, p50 ${med(id, 'p50').toFixed(2)} / p99 ${med(id, 'p99').toFixed(2)} ms`;
  if (apps.none && apps.ours) {
    const vsNone = spread(ratios(metric('ours', 'rps'), metric('none', 'rps')));
    targets.vsNone = vsNone;
    report.row('3 http', 'our guard / no guard, requests/s', {
      spread: vsNone,
      absolute: `ours ${fmt('ours')}, none ${fmt('none')}`,
      target: '≥ 0.92×',
      pass: vsNone.median >= 0.92,
    });
    targets.p99 = latencyRows(atLoad, 'ours', 'none', 'our guard − no guard', {
      percentiles: ['p99', 'p50'],
      target: true,
    }).p99;
    latencyRows(one, 'ours', 'none', 'our guard − no guard', { percentiles: ['p99', 'p50'], suffix: ', 1 connection' });
    const cpu = spread(ratios(metric('ours', 'cpuMicros'), metric('none', 'cpuMicros')));
    report.row('3 http', 'our guard / no guard, app CPU per request', {
      spread: cpu,
      absolute: `${med('ours', 'cpuMicros').toFixed(0)} µs vs ${med('none', 'cpuMicros').toFixed(0)} µs`,
    });
    cpuWithRedisRow('ours', 'none', 'our guard / no guard');
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
      target: '≥ 0.92×',
    });
  }
  if (apps['ours-client'] && apps.ours) {
    report.row('3 http', "our guard: user's client / module's connection, requests/s", {
      spread: spread(ratios(metric('ours-client', 'rps'), metric('ours', 'rps'))),
      absolute: `ours-client ${fmt('ours-client')}`,
    });
    report.row('3 http', "our guard: user's client / module's connection, app CPU per request", {
      spread: spread(ratios(metric('ours-client', 'cpuMicros'), metric('ours', 'cpuMicros'))),
      absolute: `${med('ours-client', 'cpuMicros').toFixed(0)} µs vs ${med('ours', 'cpuMicros').toFixed(0)} µs`,
    });
  }
  for (const config of HTTP_CONFIGS.filter((c) => c.packages.length > 0)) {
    if (!apps[config.id] || !apps.ours) {
      report.row('3 http', `our guard / ${config.label}`, {
        note: unavailable[config.id] ?? unavailable.ours,
        target: '≥ 1.05×',
      });
      continue;
    }
    const vs = spread(ratios(metric('ours', 'rps'), metric(config.id, 'rps')));
    targets[config.id] = vs;
    report.row('3 http', `our guard / ${config.label}, requests/s`, {
      spread: vs,
      absolute: `${config.id} ${fmt(config.id)}`,
      target: '≥ 1.05×',
      pass: vs.median >= 1.05,
    });
    cpuWithRedisRow('ours', config.id, `our guard / ${config.label}`);
    latencyRows(atLoad, 'ours', config.id, `our guard − ${config.label}`);
    latencyRows(one, 'ours', config.id, `our guard − ${config.label}`, { suffix: ', 1 connection' });
    if (apps.none) {
      report.row('3 http', `${config.label} / no guard, requests/s`, {
        spread: spread(ratios(metric(config.id, 'rps'), metric('none', 'rps'))),
      });
    }
  }

  // 6. Stacked limits, on the same apps before they stop.
  targets.stacked = await stacked(bench, apps, unavailable);
  await stopApps(apps);
  report.target('http', targets);
}
