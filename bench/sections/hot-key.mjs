// 5. Hot-key attack: one key far past its limit; Redis calls per rejected request. An attacker
//    hammering one key must not cost Redis a call per request: with the block cache, rejections of a
//    key known to be full are answered without Redis. Also checks that exactly `limit` requests were
//    admitted (none decided without Redis).
import { performance } from 'node:perf_hooks';
import { outcomeOf } from '../lib/decisions.mjs';
import { compact, drive, spread } from '../lib/measure.mjs';
import { callsDelta, commandCalls, monitor, scriptCalls } from '../lib/redis-stats.mjs';
import { log } from '../lib/report.mjs';

// The limiter configurations of the hot-key attack. THE PLACE FOR `blockCache`: when
// SlidingWindowLimiterOptions has `blockCache`, the "on" variant is measured (and "off" passes
// blockCache: false explicitly); edit the options here if the option's shape differs. The limiter
// consults its block cache only while it reads no override keys (one set by another process must
// apply to the next request), so with the defaults (keyOverrides on) "on" decides in Redis like "off";
// the ungated third variant shows the cache at work, override keys left unread.
const HOT_KEY_VARIANTS = {
  withBlockCache: [
    { label: 'blockCache off', options: { blockCache: false }, gated: false },
    { label: 'blockCache on', options: { blockCache: true }, gated: true },
    { label: 'blockCache on, keyOverrides off', options: { blockCache: true, keyOverrides: false }, gated: false },
  ],
  withoutBlockCache: [{ label: 'no blockCache option in this build', options: {}, gated: true }],
};
const ATTACK = { limit: 10, windowMs: 10_000, requests: 20_000, inFlight: 64 };

export async function hotKey({
  settings: { rounds },
  report,
  redis: { port, plain: client, stats },
  build: { SlidingWindowLimiter, hasBlockCache },
}) {
  log('5/6 hot-key attack');
  const targets = {};
  const variants = {};
  report.record('hotKey', { attack: ATTACK, blockCacheDeclared: hasBlockCache, variants });
  for (const variant of hasBlockCache ? HOT_KEY_VARIANTS.withBlockCache : HOT_KEY_VARIANTS.withoutBlockCache) {
    let limiter;
    try {
      limiter = new SlidingWindowLimiter({ client, keyPrefix: 's5:', ...variant.options });
      await limiter.init();
    } catch (error) {
      report.row('5 hot key', `${variant.label}: not measured`, { note: error.message.split('\n')[0] });
      continue;
    }
    const perRound = {
      admitted: [],
      degraded: [],
      callsPerRejected: [],
      roundTripsPerRejected: [],
      perSecond: [],
      seconds: [],
    };
    for (let round = 0; round < rounds; round++) {
      const key = `attack:${variant.label.replace(/\W+/g, '-')}:${round}`;
      const rule = { limit: ATTACK.limit, windowMs: ATTACK.windowMs };
      const watch = await monitor(port, [stats.stream.localPort]);
      const before = await commandCalls(stats);
      const started = performance.now();
      const r = await drive({
        inFlight: ATTACK.inFlight,
        warmupMs: 0,
        durationMs: ATTACK.windowMs - 1000,
        maxOps: ATTACK.requests,
        call: () => limiter.consume(key, rule).then(outcomeOf),
      });
      const seconds = (performance.now() - started) / 1000;
      const delta = callsDelta(before, await commandCalls(stats));
      const seen = await watch.stop();
      if (r.errors > 0) throw new Error(`hot key: ${r.errors} errors, first: ${r.firstError?.stack ?? r.firstError}`);
      if (r.calls < ATTACK.requests) log(`  warning: only ${r.calls} of ${ATTACK.requests} requests within the window`);
      perRound.admitted.push(r.admitted);
      perRound.degraded.push(r.degraded);
      perRound.callsPerRejected.push(scriptCalls(delta) / r.rejected);
      perRound.roundTripsPerRejected.push(seen.client / r.rejected);
      perRound.perSecond.push(r.calls / seconds);
      perRound.seconds.push(seconds);
    }
    limiter.close?.();
    variants[variant.label] = perRound;
    // A decision made without Redis under 'allow' is an admission too.
    const admittedOk = perRound.admitted.every((n, i) => n === ATTACK.limit && perRound.degraded[i] === 0);
    const calls = spread(perRound.callsPerRejected);
    targets[variant.label] = { calls, admittedOk };
    if (!admittedOk)
      log(
        `  FAIL: ${variant.label} admitted ${perRound.admitted.join(', ')}, decided without Redis ${perRound.degraded.join(', ')} (limit ${ATTACK.limit})`,
      );
    report.row(
      '5 hot key',
      `${variant.label}: admitted of ${ATTACK.requests} (limit ${ATTACK.limit}/${ATTACK.windowMs / 1000} s, ${ATTACK.inFlight} in flight)`,
      {
        spread: spread(perRound.admitted),
        unit: '',
        digits: 0,
        absolute: `decided without Redis: ${perRound.degraded.join(', ')}`,
        target: `= ${ATTACK.limit}`,
        pass: admittedOk,
      },
    );
    report.row('5 hot key', `${variant.label}: FCALL/EVALSHA per rejected request`, {
      spread: calls,
      unit: '',
      absolute: `all round trips/rejected ${spread(perRound.roundTripsPerRejected).median.toFixed(3)}; ${compact(spread(perRound.perSecond).median)} req/s`,
      // The target is the shipped configuration's; "off" is the baseline it is compared with.
      ...(variant.gated ? { target: '≤ 0.05', pass: calls.median <= 0.05 && admittedOk } : {}),
    });
  }
  if (!hasBlockCache)
    report.row('5 hot key', 'blockCache on', {
      note: 'not measured: SlidingWindowLimiterOptions has no blockCache yet (see HOT_KEY_VARIANTS)',
    });
  report.target('hotKey', targets);
}
