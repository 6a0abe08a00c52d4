// 3 guard. The guards without HTTP: each configuration's guard called in its own process,
// `settings.guard.inFlight` at a time, configurations interleaved in slices as in the HTTP section.
// What Express costs per request (most of it) is left out, so this shows what the guard, its storage
// and its Redis client cost. Runs after the HTTP section has stopped its apps, so that no idle app
// shares the machine with it. A configuration whose run fails is stopped and left out; the others go on.
import { HTTP_CONFIGS, askApp, startApps, stopApps } from '../lib/apps.mjs';
import { redisCpuSeconds } from '../lib/cpu.mjs';
import { compact, interleaved, metricsOf, ratios, spread } from '../lib/measure.mjs';
import { stopChild } from '../lib/processes.mjs';
import { log } from '../lib/report.mjs';

export async function guard({ settings, report, redis, build }) {
  const { rounds, guard: guardSettings, http: httpSettings } = settings;
  const configs = HTTP_CONFIGS.filter((c) => c.id !== 'none' && c.id !== 'ours-client');
  log(`3/6 the guards alone (no HTTP, ${guardSettings.inFlight} in flight): ${configs.map((c) => c.id).join(', ')}`);
  const { apps, unavailable } = await startApps(
    configs,
    { redisPort: redis.port, dist: build.dist, limit: httpSettings.limit, windowMs: httpSettings.windowMs },
    'guard',
  );
  const drop = async (id, error) => {
    log(`  ${id} (guard alone): left out, ${error.message}`);
    unavailable[id] = `failed: ${error.message.split('\n')[0]}`;
    const { child } = apps[id];
    delete apps[id];
    await stopChild(child);
  };
  /** One run of `id`'s guard (guardSettings.decisions calls, see http-app.mjs), or undefined once it has failed (and was dropped). */
  const run = (id) =>
    askApp(apps[id], { run: guardSettings.decisions, inFlight: guardSettings.inFlight }, guardSettings.timeoutMs).catch(
      (error) => drop(id, error),
    );

  // Warm-up: one run each (JIT, connections, the limiter's library load).
  for (const id of Object.keys(apps)) await run(id);
  const ids = Object.keys(apps);
  const samples = Object.fromEntries(ids.map((id) => [id, []]));
  for (let round = 0; round < rounds && apps.ours; round++) {
    const sums = Object.fromEntries(
      ids.map((id) => [id, { decisions: 0, seconds: 0, cpuSeconds: 0, redisCpuSeconds: 0 }]),
    );
    for (const id of interleaved(ids, guardSettings.slices, round)) {
      if (!apps[id]) continue;
      // Redis' CPU over the run as well (INFO cpu): the storage's share of a decision.
      const redisBefore = await redisCpuSeconds(redis.stats);
      const r = await run(id);
      if (!r) continue;
      r.redisCpuSeconds = (await redisCpuSeconds(redis.stats)) - redisBefore;
      for (const name of ['decisions', 'seconds', 'cpuSeconds', 'redisCpuSeconds']) sums[id][name] += r[name];
    }
    for (const id of Object.keys(apps)) {
      samples[id][round] = {
        perSecond: sums[id].decisions / sums[id].seconds,
        cpuMicros: (sums[id].cpuSeconds * 1e6) / sums[id].decisions,
        redisCpuMicros: (sums[id].redisCpuSeconds * 1e6) / sums[id].decisions,
        totalCpuMicros: ((sums[id].cpuSeconds + sums[id].redisCpuSeconds) * 1e6) / sums[id].decisions,
      };
    }
  }
  await stopApps(apps);
  // Only configurations measured in every round are compared.
  for (const id of ids) if (!apps[id]) delete samples[id];
  report.record('guardAlone', {
    decisionsPerSlice: guardSettings.decisions,
    slices: guardSettings.slices,
    inFlight: guardSettings.inFlight,
    samples,
    unavailable,
  });

  if (!apps.ours) {
    report.row('3 guard', 'our guard / the others', { note: unavailable.ours });
    return;
  }
  const { metric, med } = metricsOf(samples);
  for (const config of configs.filter((c) => c.id !== 'ours')) {
    if (!apps[config.id]) {
      report.row('3 guard', `our guard / ${config.label}`, { note: unavailable[config.id] });
      continue;
    }
    const cpu = (id) =>
      `${med(id, 'totalCpuMicros').toFixed(1)} µs (app ${med(id, 'cpuMicros').toFixed(1)} + Redis ${med(id, 'redisCpuMicros').toFixed(1)})`;
    report.row('3 guard', `our guard / ${config.label}, app + Redis CPU per decision`, {
      spread: spread(ratios(metric('ours', 'totalCpuMicros'), metric(config.id, 'totalCpuMicros'))),
      absolute: `${cpu('ours')} vs ${cpu(config.id)}`,
    });
    report.row('3 guard', `our guard / ${config.label}, decisions/s`, {
      spread: spread(ratios(metric('ours', 'perSecond'), metric(config.id, 'perSecond'))),
      absolute: `${compact(med('ours', 'perSecond'))}/s vs ${compact(med(config.id, 'perSecond'))}/s`,
    });
  }
}
