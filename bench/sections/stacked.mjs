// 6. Stacked limits on one handler: Redis round trips per request, counted by the server (MONITOR),
//    for a route with two @SlidingLimit next to a route with one, in the same app: two limits on one
//    route must still cost one round trip. Runs inside the HTTP section, on its `ours` app.
import { autocannonRun } from '../lib/http-load.mjs';
import { spread } from '../lib/measure.mjs';
import { callsDelta, commandCalls, monitor, scriptCalls } from '../lib/redis-stats.mjs';
import { log } from '../lib/report.mjs';

/**
 * Measures on `apps.ours`, started by the HTTP section (`unavailable.ours` says why it is missing);
 * returns the spread the target was judged on, or undefined when there was nothing to measure.
 */
export async function stacked(
  { settings: { rounds, quick }, report, redis: { port: redisPort, stats } },
  apps,
  unavailable,
) {
  log('6/6 stacked limits: Redis round trips per request');
  if (!apps.ours) {
    report.row('6 stacked', 'two @SlidingLimit on one route: round trips / request', {
      note: unavailable.ours,
      target: '= 1',
      pass: false,
    });
    return undefined;
  }
  const perRoute = {};
  for (const route of ['/', '/stacked']) {
    perRoute[route] = { roundTrips: [], decisions: [] };
    for (let round = 0; round < rounds; round++) {
      const watch = await monitor(redisPort, [stats.stream.localPort]);
      const before = await commandCalls(stats);
      const r = await autocannonRun(`http://127.0.0.1:${apps.ours.port}${route}`, {
        connections: 10,
        amount: quick ? 500 : 2000,
      });
      const delta = callsDelta(before, await commandCalls(stats));
      const seen = await watch.stop();
      perRoute[route].roundTrips.push(seen.client / r.ok);
      perRoute[route].decisions.push(scriptCalls(delta) / r.ok);
      perRoute[route].requests = (perRoute[route].requests ?? 0) + r.ok;
      perRoute[route].background = (perRoute[route].background ?? 0) + seen.background;
      perRoute[route].byCommand ??= {};
      for (const [command, n] of Object.entries(seen.byCommand))
        perRoute[route].byCommand[command] = (perRoute[route].byCommand[command] ?? 0) + n;
      if (r.non2xx > 0 || r.errors > 0) log(`  warning: stacked ${route}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    }
  }
  report.record('stacked', perRoute);
  const roundTrips = spread(perRoute['/stacked'].roundTrips);
  const commands = (route) =>
    `${perRoute[route].requests} requests, commands sent: ${JSON.stringify(perRoute[route].byCommand)}` +
    (perRoute[route].background
      ? `; plus ${perRoute[route].background} instance-report write(s), not per request`
      : '');
  report.row('6 stacked', 'two @SlidingLimit on one route: round trips / request', {
    spread: roundTrips,
    unit: '',
    absolute: commands('/stacked'),
    target: '= 1',
    pass: roundTrips.max <= 1,
  });
  report.row('6 stacked', 'one @SlidingLimit (same app): round trips / request', {
    spread: spread(perRoute['/'].roundTrips),
    unit: '',
    absolute: commands('/'),
  });
  return roundTrips;
}
