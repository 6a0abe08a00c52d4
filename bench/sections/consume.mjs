// 2. consume() against a bare ioredis fcall loop and rate-limiter-flexible, with and without
//    ioredis auto-pipelining, over many keys, one hot admitting key and one hot rejecting key, at
//    1, 64 and 256 calls in flight; then Redis' time per decision, batched or not. consume() is the
//    limiter with its defaults (the default function, override keys read, batching); the bare fcall
//    is the article's sliding_allow_v1, which a team would load and call by hand. The gated row
//    (100k keys, 64 in flight) is what a decision through the limiter costs against that bare fcall,
//    as CPU per decision (this process + Redis, per slice, summed per round): the figure a shared host
//    does not move much. Decisions/s stand beside it, ungated.
import { createRequire } from 'node:module';
import { KEYSPACE } from '../lib/config.mjs';
import { bareAdmitted, bareFcall, memberSource, outcomeOf } from '../lib/decisions.mjs';
import { cpuSum, describeCpu, withCpu } from '../lib/cpu.mjs';
import { compact, drive, interleaved, ratios, spread } from '../lib/measure.mjs';
import { commandStats, scriptMicros } from '../lib/redis-stats.mjs';
import { log } from '../lib/report.mjs';

const require = createRequire(import.meta.url);

/** The keys each variant decides on: many keys, one hot key under its limit, one hot key over it. */
const KEY_CASES = [
  { id: 'keys', label: '100k keys', limit: 1000, windowMs: 60_000, key: (i) => `k${i % KEYSPACE}` },
  { id: 'hot', label: 'hot key admitting', limit: 1_000_000, windowMs: 1_000, key: () => 'hot' },
  { id: 'reject', label: 'hot key rejecting', limit: 10, windowMs: 600_000, key: () => 'full' },
];

export async function consume({
  settings,
  report,
  redis: { plain, autoPipelined, stats },
  build: { SlidingWindowLimiter, hasBlockCache },
}) {
  const { rounds, quick, loop, inFlight: inFlightLevels } = settings;
  log('2/6 consume(): bare fcall, ours, rate-limiter-flexible; auto-pipelining off/on');
  const { RateLimiterRedis, RateLimiterRes } = require('rate-limiter-flexible');
  const limiters = {};
  // ours / oursAP: the limiter with its defaults; oursNoCache: blockCache off, where it can matter;
  // oursUnbatched: batch off (one call per decision), over the 100k keys.
  const builds = [
    ['ours', plain, {}],
    ['oursAP', autoPipelined, {}],
    ...(hasBlockCache ? [['oursNoCache', plain, { blockCache: false }]] : []),
    ['oursUnbatched', plain, { batch: false }],
  ];
  for (const [name, client, extra] of builds) {
    // Batch off is compared over the 100k keys only (see variantsOf).
    for (const c of name === 'oursUnbatched' ? KEY_CASES.filter((k) => k.id === 'keys') : KEY_CASES) {
      limiters[`${name}:${c.id}`] = new SlidingWindowLimiter({ client, keyPrefix: `s2:${name}:${c.id}:`, ...extra });
      await limiters[`${name}:${c.id}`].init();
    }
  }
  const flexible = Object.fromEntries(
    KEY_CASES.map((c) => [
      c.id,
      new RateLimiterRedis({
        storeClient: plain,
        keyPrefix: `s2:rlf:${c.id}`,
        points: c.limit,
        duration: c.windowMs / 1000,
      }),
    ]),
  );
  const bareCall = (client, name, c) => {
    const next = memberSource();
    const prefix = `s2:${name}:${c.id}:`;
    // What a hand-written caller sends: the article's function, the same limit and window as consume().
    return (i) => bareFcall(client, prefix + c.key(i), Date.now(), c, next()).then(bareAdmitted);
  };
  const calls = (c) => {
    const rule = { limit: c.limit, windowMs: c.windowMs };
    const ours = limiters[`ours:${c.id}`];
    const oursAP = limiters[`oursAP:${c.id}`];
    const rlf = flexible[c.id];
    return {
      bare: bareCall(plain, 'bare', c),
      ours: (i) => ours.consume(c.key(i), rule).then(outcomeOf),
      rlf: (i) =>
        rlf.consume(c.key(i)).then(
          () => true,
          (error) => {
            if (error instanceof RateLimiterRes) return false;
            throw error;
          },
        ),
      bareAP: bareCall(autoPipelined, 'bareAP', c),
      oursAP: (i) => oursAP.consume(c.key(i), rule).then(outcomeOf),
      oursNoCache: (i) => limiters[`oursNoCache:${c.id}`].consume(c.key(i), rule).then(outcomeOf),
      oursUnbatched: (i) => limiters[`oursUnbatched:${c.id}`].consume(c.key(i), rule).then(outcomeOf),
    };
  };
  // Only a rejecting key can be answered by the block cache: there, ours without it too.
  const variantsOf = (c) => [
    'bare',
    'ours',
    'rlf',
    'bareAP',
    'oursAP',
    ...(hasBlockCache && c.id === 'reject' ? ['oursNoCache'] : []),
    ...(c.id === 'keys' ? ['oursUnbatched'] : []),
  ];
  const perCase = Object.fromEntries(KEY_CASES.map((c) => [c.id, calls(c)]));

  // JIT warm-up of every path, and the rejecting keys filled to their limit.
  for (const c of KEY_CASES) {
    for (const name of variantsOf(c))
      await drive({
        inFlight: 64,
        warmupMs: 0,
        durationMs: quick ? 50 : 200,
        maxOps: 200_000,
        call: perCase[c.id][name],
      });
  }

  const samples = {};
  const cpuSamples = {};
  const outcomes = {};
  for (let round = 0; round < rounds; round++) {
    for (const c of KEY_CASES) {
      const variantNames = variantsOf(c);
      for (const inFlight of inFlightLevels) {
        const cell = `${c.id}@${inFlight}`;
        samples[cell] ??= Object.fromEntries(variantNames.map((name) => [name, []]));
        outcomes[cell] ??= Object.fromEntries(
          variantNames.map((name) => [name, { admitted: 0, rejected: 0, degraded: 0 }]),
        );
        // Fine-grained alternation (A B C D E, B C D E A, …) so that bursts of other work on the
        // machine hit every variant alike; a round's rate per variant = its calls / its time.
        // CPU per decision: this process's and Redis' CPU over each whole slice, per call it made.
        const totals = Object.fromEntries(
          variantNames.map((name) => [name, { counted: 0, seconds: 0, cpu: cpuSum() }]),
        );
        for (const name of interleaved(variantNames, loop.slices, round)) {
          const measured = await withCpu(stats, () =>
            drive({
              inFlight,
              warmupMs: loop.warmupMs,
              durationMs: loop.sliceMs,
              maxOps: loop.maxOps,
              call: perCase[c.id][name],
            }),
          );
          const r = measured.result;
          totals[name].cpu.add(measured, r.calls);
          if (r.errors > 0)
            throw new Error(
              `section 2 ${name} ${cell}: ${r.errors} errors, first: ${r.firstError?.stack ?? r.firstError}`,
            );
          totals[name].counted += r.counted;
          totals[name].seconds += r.seconds;
          outcomes[cell][name].admitted += r.admitted;
          outcomes[cell][name].rejected += r.rejected;
          outcomes[cell][name].degraded += r.degraded;
        }
        cpuSamples[cell] ??= Object.fromEntries(variantNames.map((name) => [name, []]));
        for (const name of variantNames) {
          samples[cell][name][round] = totals[name].counted / totals[name].seconds;
          cpuSamples[cell][name][round] = totals[name].cpu.perDecision();
        }
      }
    }
    log(`  round ${round + 1}/${rounds} done`);
  }
  // Redis time per decision (all script calls' time / decisions), each variant on its own over the
  // 100k keys at 64 in flight: what one decision costs the server, batched or not. Variants take
  // turns within a round (order rotated per round), so each ratio pairs runs made together.
  const keysCase = KEY_CASES.find((c) => c.id === 'keys');
  const timedVariants = ['bare', 'ours', 'oursUnbatched', 'rlf'];
  const redisMicros = Object.fromEntries(timedVariants.map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const name of interleaved(timedVariants, 1, round)) {
      await plain.config('RESETSTAT');
      const r = await drive({
        inFlight: 64,
        warmupMs: 0,
        durationMs: quick ? 100 : 300,
        maxOps: loop.maxOps,
        call: perCase.keys[name],
      });
      redisMicros[name][round] = scriptMicros(await commandStats(plain)) / (r.admitted + r.rejected);
    }
  }
  for (const limiter of Object.values(limiters)) limiter.close?.();
  const micros = (name) => spread(redisMicros[name]).median;
  report.row('2 consume', 'Redis time per decision: consume() / bare fcall (100k keys, 64 in flight)', {
    spread: spread(ratios(redisMicros.ours, redisMicros.bare)),
    absolute: `${micros('ours').toFixed(2)} µs vs ${micros('bare').toFixed(2)} µs; batch off ${micros('oursUnbatched').toFixed(2)} µs (INFO commandstats)`,
  });
  report.row('2 consume', 'Redis time per decision: consume() / rate-limiter-flexible', {
    spread: spread(ratios(redisMicros.ours, redisMicros.rlf)),
    absolute: `${micros('ours').toFixed(2)} µs vs ${micros('rlf').toFixed(2)} µs`,
  });
  report.record('redisMicrosPerDecision', { ...redisMicros, case: keysCase.label });
  report.record('consume', {
    loop,
    cases: KEY_CASES.map(({ id, label, limit, windowMs }) => ({ id, label, limit, windowMs })),
    samples,
    cpuSamples,
    outcomes,
  });

  for (const c of KEY_CASES) {
    const variantNames = variantsOf(c);
    for (const inFlight of inFlightLevels) {
      const cell = `${c.id}@${inFlight}`;
      const s = samples[cell];
      const med = Object.fromEntries(variantNames.map((name) => [name, spread(s[name]).median]));
      const cpuOf = (name, part = 'cpuMicros') => cpuSamples[cell][name].map((x) => x[part]);
      const cpuMed = (name) =>
        Object.fromEntries(['cpuMicros', 'clientMicros', 'redisMicros'].map((p) => [p, spread(cpuOf(name, p)).median]));
      const cpuRow = (a, b, label, target) => {
        const ratio = spread(ratios(cpuOf(a), cpuOf(b)));
        report.row('2 consume', `${label}, CPU per decision (client + Redis) — ${where}`, {
          spread: ratio,
          absolute: `${describeCpu(cpuMed(a))} vs ${describeCpu(cpuMed(b))}`,
          ...(target ? { target: `≤ ${target}×`, pass: ratio.median <= target } : {}),
        });
        return ratio;
      };
      const where = `${c.label}, ${inFlight} in flight`;
      const expectAdmit = c.id !== 'reject';
      for (const name of variantNames) {
        const o = outcomes[cell][name];
        if (o.degraded > 0 || (expectAdmit ? o.rejected > 0 : o.admitted > 0)) {
          log(
            `  warning: ${name} ${cell} admitted ${o.admitted}, rejected ${o.rejected}, decided without Redis ${o.degraded}`,
          );
        }
      }
      const vsBare = spread(ratios(s.ours, s.bare));
      const vsFlexible = spread(ratios(s.ours, s.rlf));
      // The gated rows are CPU per decision (issue 19): decisions/s on this shared host is noise.
      const gated = c.id === 'keys' && inFlight === 64;
      const cpuVsBare = cpuRow('ours', 'bare', 'consume() / bare fcall', gated && 0.8);
      const cpuVsFlexible = cpuRow('ours', 'rlf', 'consume() / rate-limiter-flexible', gated && 0.87);
      if (gated) report.target('consume', { vsBare, vsFlexible, cpuVsBare, cpuVsFlexible });
      const fallbacks = outcomes[cell].ours.degraded + outcomes[cell].oursAP.degraded;
      report.row('2 consume', `consume() / bare fcall, decisions/s — ${where}`, {
        spread: vsBare,
        absolute: `${compact(med.ours)}/s vs ${compact(med.bare)}/s${fallbacks ? `; ${fallbacks} decided without Redis (timeout)` : ''}`,
      });
      report.row('2 consume', `consume() / rate-limiter-flexible, decisions/s — ${where}`, {
        spread: vsFlexible,
        absolute: `${compact(med.ours)}/s vs ${compact(med.rlf)}/s`,
      });
      if (s.oursUnbatched) {
        cpuRow('oursUnbatched', 'bare', 'consume() batch off / bare fcall');
        report.row('2 consume', `consume() batch off / bare fcall, decisions/s — ${where}`, {
          spread: spread(ratios(s.oursUnbatched, s.bare)),
          absolute: `${compact(spread(s.oursUnbatched).median)}/s vs ${compact(med.bare)}/s`,
        });
      }
      if (s.oursNoCache) {
        cpuRow('oursNoCache', 'bare', 'consume() blockCache off / bare fcall');
        report.row('2 consume', `consume() blockCache off / bare fcall, decisions/s — ${where}`, {
          spread: spread(ratios(s.oursNoCache, s.bare)),
          absolute: `${compact(spread(s.oursNoCache).median)}/s vs ${compact(med.bare)}/s`,
        });
      }
      cpuRow('bareAP', 'bare', 'bare fcall, auto-pipelining on / off');
      cpuRow('oursAP', 'ours', 'consume(), auto-pipelining on / off');
      report.row('2 consume', `bare fcall, auto-pipelining on / off, decisions/s — ${where}`, {
        spread: spread(ratios(s.bareAP, s.bare)),
        absolute: `${compact(med.bareAP)}/s vs ${compact(med.bare)}/s`,
      });
      report.row('2 consume', `consume(), auto-pipelining on / off, decisions/s — ${where}`, {
        spread: spread(ratios(s.oursAP, s.ours)),
        absolute: `${compact(med.oursAP)}/s vs ${compact(med.ours)}/s`,
      });
    }
  }
}
