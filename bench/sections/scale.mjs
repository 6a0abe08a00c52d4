// 11. How cost grows, as tables and one SVG plot each (bench/results/scale-*.svg):
//   keys     consume() (defaults) and a bare FCALL of the article's sliding_allow_v1 at 64 in flight as
//            the keys grow (1k → 1M, BENCH_SCALE_KEYS): decisions/s and CPU per decision (this process +
//            Redis). Both decide on the same keys (v1's sorted set, which v2's log shares), prefilled
//            with one entry each by pipelined bare FCALLs (1-hour window: none expires while the next
//            are filled); the next point adds to them.
//   memory   Redis' used_memory as keys × limit grow, for the log and the bucketed window
//            (rate_limit_v2, 1 h window, 1-minute sub-windows), each key a full window of traffic on a
//            synthetic clock. Points whose fill would take more than `fillBudget` FCALLs are projected
//            from the largest measured key count of the same window and limit (labelled as such).
//   stacked  Redis time per decision (INFO commandstats) and Redis CPU per decision as stacked limits
//            grow 1 → 5 (consumeAll, 64 in flight, 10k identities).
//   batch    the same as the batch size grows 1 → 64 (batch: { maxSize }, consume() at 64 in flight).
// Variants of one curve are interleaved in slices per round; each point is the median of its rounds.
import { join } from 'node:path';
import { cpuSum, withCpu } from '../lib/cpu.mjs';
import { bareAdmitted, bareFcall, memberSource, outcomeOf } from '../lib/decisions.mjs';
import { compact, drive, interleaved, median } from '../lib/measure.mjs';
import { commandStats, deleteMatching, scriptMicros } from '../lib/redis-stats.mjs';
import { log } from '../lib/report.mjs';
import { writeLinePlot } from '../lib/svg-plot.mjs';
import { mergedBySubWindow, sendAll, WINDOW_FUNCTION } from '../lib/windows.mjs';

const HOUR = 3_600_000;
const MINUTE = 60_000;
const RULE = { limit: 1000, windowMs: 60_000 };
/** The keys curve's limit: a window longer than the fill of a million keys takes, so none expires. */
const KEYS_RULE = { limit: 10_000, windowMs: 3_600_000 };
/** Spreads call i over `keys` keys without a pattern the cache could follow. */
const spreadKey = (i, keys) => (i * 2_654_435_761) % keys;

export async function scale({ settings, report, redis, build, resultsDir }) {
  const { rounds, quick, scale: s } = settings;
  const plots = {};
  const plotFile = (name) => join(resultsDir, `${quick ? 'quick-' : ''}${name}.svg`);
  plots.keys = await keysCurve({ rounds, s, report, redis, build, file: plotFile('scale-keys') });
  plots.memory = await memoryCurve({ quick, s, report, redis, file: plotFile('scale-memory') });
  plots.stacked = await stackedCurve({ rounds, s, report, redis, build, file: plotFile('scale-stacked') });
  plots.batch = await batchCurve({ rounds, s, report, redis, build, file: plotFile('scale-batch') });
  report.record('scale', plots);
}

/**
 * One slice of `call` at 64 in flight: decisions, this process's and Redis' CPU, Redis' time in
 * function calls (commandstats) and the FCALLs made.
 */
async function measuredSlice(stats, call, { sliceMs, maxOps }) {
  const before = await commandStats(stats);
  const m = await withCpu(stats, () => drive({ inFlight: 64, warmupMs: 0, durationMs: sliceMs, maxOps, call }));
  const after = await commandStats(stats);
  if (m.result.errors > 0) throw new Error(`scale: ${m.result.errors} calls failed: ${m.result.firstError?.message}`);
  return {
    ...m,
    decisions: m.result.calls,
    seconds: m.result.seconds,
    rejected: m.result.rejected,
    scriptUsec: scriptMicros(after) - scriptMicros(before),
    scriptCalls: (after.fcall?.calls ?? 0) - (before.fcall?.calls ?? 0),
  };
}

/**
 * `rounds` rounds of `variants` (`{ id: call }`) interleaved in `slices` slices: per variant the
 * medians over rounds of decisions/s, CPU per decision (total, client, Redis), Redis time per decision
 * (commandstats) and decisions per FCALL.
 */
async function interleavedPoint(stats, variants, { rounds, slices, sliceMs, maxOps }) {
  const ids = Object.keys(variants);
  for (const id of ids) await drive({ inFlight: 64, warmupMs: 0, durationMs: 100, maxOps, call: variants[id] });
  const perRound = Object.fromEntries(ids.map((id) => [id, []]));
  let rejected = 0;
  for (let round = 0; round < rounds; round++) {
    const sums = Object.fromEntries(ids.map((id) => [id, { cpu: cpuSum(), usec: 0, fcalls: 0 }]));
    for (const id of interleaved(ids, slices, round)) {
      const m = await measuredSlice(stats, variants[id], { sliceMs, maxOps });
      sums[id].cpu.add(m, m.decisions, m.seconds);
      sums[id].usec += m.scriptUsec;
      sums[id].fcalls += m.scriptCalls;
      rejected += m.rejected;
    }
    for (const id of ids) {
      const { cpu, usec, fcalls } = sums[id];
      perRound[id].push({
        perSecond: cpu.sum.decisions / cpu.sum.wallSeconds,
        ...cpu.perDecision(),
        redisUsecPerDecision: usec / cpu.sum.decisions,
        decisionsPerCall: cpu.sum.decisions / fcalls,
      });
    }
  }
  if (rejected > 0) log(`  warning: ${rejected} decisions rejected (limits meant to be out of reach)`);
  const medians = Object.fromEntries(
    ids.map((id) => [
      id,
      Object.fromEntries(Object.keys(perRound[id][0]).map((name) => [name, median(perRound[id].map((r) => r[name]))])),
    ]),
  );
  return { medians, perRound };
}

async function keysCurve({ rounds, s, report, redis, build, file }) {
  const { plain, stats } = redis;
  log(`11 scale: keys ${s.keys.map(compact).join(' → ')} (consume() and bare FCALL, 64 in flight)`);
  const prefix = 's11:k:';
  const limiter = new build.SlidingWindowLimiter({ client: plain, keyPrefix: prefix });
  await limiter.init();
  const next = memberSource();
  const points = [];
  let filled = 0;
  for (const keys of s.keys) {
    // Prefill the new keys with one entry each, pipelined, two pipelines in flight.
    const began = Date.now();
    const chunk = 2000;
    const fill = async (from) => {
      const pipeline = plain.pipeline();
      for (let k = from; k < Math.min(from + chunk, keys); k++)
        bareFcall(pipeline, `${prefix}${k}`, Date.now(), KEYS_RULE, next());
      for (const [error] of await pipeline.exec()) if (error) throw error;
    };
    for (let from = filled; from < keys; from += 2 * chunk) await Promise.all([fill(from), fill(from + chunk)]);
    const fillSeconds = (Date.now() - began) / 1000;
    filled = keys;
    const dbsize = await plain.dbsize();
    const { medians, perRound } = await interleavedPoint(
      stats,
      {
        ours: (i) => limiter.consume(String(spreadKey(i, keys)), KEYS_RULE).then(outcomeOf),
        bare: (i) =>
          bareFcall(plain, `${prefix}${spreadKey(i, keys)}`, Date.now(), KEYS_RULE, next()).then(bareAdmitted),
      },
      { rounds, slices: s.slices, sliceMs: s.sliceMs, maxOps: s.maxOps },
    );
    points.push({ keys, dbsize, fillSeconds, medians, perRound });
    const { ours, bare } = medians;
    report.row('11 scale', `keys ${compact(keys)}: consume() CPU per decision (client + Redis)`, {
      value: ours.cpuMicros,
      unit: 'µs',
      digits: 1,
      absolute:
        `${compact(ours.perSecond)}/s; client ${ours.clientMicros.toFixed(1)} + Redis ${ours.redisMicros.toFixed(1)} µs; ` +
        `bare FCALL ${bare.cpuMicros.toFixed(1)} µs, ${compact(bare.perSecond)}/s; ${compact(dbsize)} keys in Redis, filled in ${fillSeconds.toFixed(0)} s`,
    });
  }
  limiter.close?.();
  await deleteMatching(plain, `${prefix}*`);
  writeLinePlot(file, {
    title: 'CPU per decision as keys grow (64 in flight)',
    xLabel: 'keys in Redis',
    yLabel: 'CPU per decision, µs (client + Redis)',
    logX: true,
    series: [
      { name: 'consume()', points: points.map((p) => [p.keys, p.medians.ours.cpuMicros]) },
      { name: 'consume(): Redis only', points: points.map((p) => [p.keys, p.medians.ours.redisMicros]) },
      { name: 'bare FCALL', points: points.map((p) => [p.keys, p.medians.bare.cpuMicros]) },
      { name: 'bare FCALL: Redis only', points: points.map((p) => [p.keys, p.medians.bare.redisMicros]) },
    ],
  });
  return points;
}

async function usedMemory(client) {
  return Number((await client.info('memory')).match(/^used_memory:(\d+)/m)[1]);
}

async function memoryCurve({ quick, s, report, redis, file }) {
  const { plain } = redis;
  const fillBudget = quick ? 30_000 : 600_000;
  log(`11 scale: memory, keys ${s.memoryKeys.map(compact).join(', ')} × limits ${s.memoryLimits.join(', ')}`);
  const fromMs = Math.floor(Date.now() / HOUR) * HOUR;
  const kinds = [
    { id: 'log', label: 'log', precisionMs: 0 },
    { id: 'bucketed', label: 'bucketed 1 min', precisionMs: MINUTE },
  ];
  const cells = [];
  for (const kind of kinds) {
    for (const limit of s.memoryLimits) {
      const spec = { windowMs: HOUR, limit, precisionMs: kind.precisionMs };
      const prefix = `s11:m:${kind.id}:${limit}:`;
      const callsFor = (from, to) => {
        let calls = [];
        for (let k = from; k < to; k++) {
          for (let r = 0; r < limit; r++) calls.push([`${prefix}${k}`, fromMs + Math.floor((r * HOUR) / limit), 1]);
        }
        if (kind.precisionMs) calls = mergedBySubWindow(calls, kind.precisionMs);
        return calls;
      };
      const callsPerKey = callsFor(0, 1).length;
      const chunkKeys = Math.max(1, Math.floor(50_000 / callsPerKey));
      const baseline = await usedMemory(plain);
      let filled = 0;
      const fillTo = async (keys) => {
        // Bounded memory in this process: fill in chunks of keys.
        for (let from = filled; from < keys; from += chunkKeys)
          await sendAll(plain, spec, callsFor(from, Math.min(from + chunkKeys, keys)));
        filled = keys;
        return { keys, bytes: (await usedMemory(plain)) - baseline, measured: true };
      };
      const affordable = (keys) => keys * callsPerKey <= fillBudget;
      const points = [];
      // When not even the first key count fits the budget, measure at the count that does.
      let last = affordable(s.memoryKeys[0])
        ? undefined
        : await fillTo(Math.max(100, Math.floor(fillBudget / callsPerKey)));
      for (const keys of s.memoryKeys) {
        if (affordable(keys)) {
          last = await fillTo(keys);
          points.push(last);
        } else points.push({ keys, bytes: (last.bytes / last.keys) * keys, measured: false, from: last.keys });
      }
      await deleteMatching(plain, `${prefix}*`);
      cells.push({
        kind: kind.id,
        label: `${kind.label}, ${limit.toLocaleString('en-US')} / 1 h`,
        limit,
        callsPerKey,
        measuredAt: last.keys,
        points,
      });
      const shown = points
        .map(
          (p) =>
            `${compact(p.keys)} keys ${(p.bytes / 2 ** 20).toFixed(1)} MB${p.measured ? '' : ` (projected from ${compact(p.from)})`}`,
        )
        .join('; ');
      const perKey = last;
      report.row('11 scale', `memory, ${kind.label}, ${limit.toLocaleString('en-US')} / 1 h: bytes per key`, {
        value: perKey ? perKey.bytes / perKey.keys : NaN,
        unit: 'B',
        digits: 0,
        absolute: `used_memory: ${shown}`,
      });
    }
  }
  writeLinePlot(file, {
    title: `Redis memory as keys × limit grow (${WINDOW_FUNCTION}, 1 h window)`,
    xLabel: 'keys, each a full window of traffic',
    yLabel: 'used_memory added, MB',
    logX: true,
    logY: true,
    note: 'hollow marks: projected from the largest measured key count of the same line',
    series: cells.map((c) => ({
      name: c.label,
      points: c.points.map((p) => [p.keys, p.bytes / 2 ** 20, { open: !p.measured }]),
    })),
  });
  return { fillBudget, cells };
}

async function stackedCurve({ rounds, s, report, redis, build, file }) {
  const { plain, stats } = redis;
  log(`11 scale: stacked limits ${s.stacked.join(', ')} (consumeAll, 64 in flight)`);
  const limiter = new build.SlidingWindowLimiter({ client: plain, keyPrefix: 's11:s:' });
  await limiter.init();
  const identities = 10_000;
  const variants = Object.fromEntries(
    s.stacked.map((n) => [
      `n${n}`,
      (i) => {
        const id = spreadKey(i, identities);
        const rules = [];
        // Each limit its own key and window, the keys in one slot (the identity as hash tag).
        for (let j = 0; j < n; j++)
          rules.push({ key: `{${id}}:r${j}:${n}`, limit: 1000 * (j + 1), windowMs: 60_000 * (j + 1) });
        return limiter.consumeAll(rules).then(outcomeOf);
      },
    ]),
  );
  const { medians, perRound } = await interleavedPoint(stats, variants, {
    rounds,
    slices: s.slices,
    sliceMs: s.sliceMs,
    maxOps: s.maxOps,
  });
  limiter.close?.();
  await deleteMatching(plain, 's11:s:*');
  const points = s.stacked.map((n) => ({ limits: n, ...medians[`n${n}`] }));
  costRows(report, points, (p) => `${p.limits} stacked limit${p.limits > 1 ? 's' : ''}`);
  writeLinePlot(file, {
    title: 'Redis cost per decision as stacked limits grow',
    xLabel: 'limits on one request (consumeAll)',
    yLabel: 'µs per decision',
    series: costSeries(points, (p) => p.limits),
  });
  return { points, perRound };
}

/** One table row per point of a cost curve (stacked limits, batch size): Redis time, CPU, rate. */
function costRows(report, points, labelOf) {
  for (const p of points) {
    report.row('11 scale', `${labelOf(p)}: Redis time per decision`, {
      value: p.redisUsecPerDecision,
      unit: 'µs',
      digits: 2,
      absolute:
        `Redis CPU ${p.redisMicros.toFixed(1)} µs, client ${p.clientMicros.toFixed(1)} µs per decision; ` +
        `${compact(p.perSecond)}/s; ${p.decisionsPerCall.toFixed(1)} decisions per FCALL`,
    });
  }
}

/** The three lines of a cost curve's plot, against `xOf(point)`. */
function costSeries(points, xOf) {
  return [
    { name: 'Redis time (commandstats)', points: points.map((p) => [xOf(p), p.redisUsecPerDecision]) },
    { name: 'Redis CPU (INFO cpu)', points: points.map((p) => [xOf(p), p.redisMicros]) },
    { name: 'client CPU', points: points.map((p) => [xOf(p), p.clientMicros]) },
  ];
}

async function batchCurve({ rounds, s, report, redis, build, file }) {
  const { plain, stats } = redis;
  log(`11 scale: batch size ${s.batchSizes.join(', ')} (consume(), 64 in flight, 100k keys)`);
  const limiters = {};
  const variants = {};
  for (const size of s.batchSizes) {
    const limiter = new build.SlidingWindowLimiter({ client: plain, keyPrefix: 's11:b:', batch: { maxSize: size } });
    await limiter.init();
    limiters[size] = limiter;
    variants[`b${size}`] = (i) => limiter.consume(String(spreadKey(i, 100_000)), RULE).then(outcomeOf);
  }
  const { medians, perRound } = await interleavedPoint(stats, variants, {
    rounds,
    slices: s.slices,
    sliceMs: s.sliceMs,
    maxOps: s.maxOps,
  });
  for (const limiter of Object.values(limiters)) limiter.close?.();
  await deleteMatching(plain, 's11:b:*');
  const points = s.batchSizes.map((size) => ({ maxSize: size, ...medians[`b${size}`] }));
  costRows(report, points, (p) => `batch maxSize ${p.maxSize}`);
  writeLinePlot(file, {
    title: 'Cost per decision as the batch grows (64 in flight)',
    xLabel: 'batch maxSize',
    yLabel: 'µs per decision',
    logX: true,
    series: costSeries(points, (p) => p.maxSize),
  });
  return { points, perRound };
}
