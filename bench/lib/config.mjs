// The run's settings: what the environment asks for (BENCH_ROUNDS, BENCH_HTTP_ROUNDS, BENCH_QUICK,
// BENCH_ONLY, BENCH_SCALE_KEYS), checked before anything starts, and the durations and concurrencies of
// the sections, which BENCH_QUICK shortens.

/** The sections, in the order they run; BENCH_ONLY takes these names. */
export const SECTIONS = [
  'ceiling',
  'consume',
  'memory',
  'hotKey',
  'http',
  'guard',
  'windowMemory',
  'windowTime',
  'windowCost',
  'latency',
  'scale',
  'cluster',
];
/** How many distinct keys the "many keys" loads spread over. */
export const KEYSPACE = 100_000;

/** The settings of one run, from `env`; throws on a BENCH_ROUNDS or BENCH_ONLY it cannot use. */
export function settingsFromEnv(env = process.env) {
  const rounds = roundsFromEnv(env);
  const quick = env.BENCH_QUICK === '1';
  // The 50-connection requests/s target is judged on at least 7 rounds; BENCH_HTTP_ROUNDS overrides.
  const httpRounds = roundsFromEnv(env, 'BENCH_HTTP_ROUNDS', quick ? rounds : Math.max(7, rounds));
  const scaleKeys = keyCountsFromEnv(env, quick);
  const only = env.BENCH_ONLY ? env.BENCH_ONLY.split(',').map((name) => name.trim()) : SECTIONS;
  for (const name of only)
    if (!SECTIONS.includes(name))
      throw new Error(`BENCH_ONLY: unknown section "${name}" (sections: ${SECTIONS.join(', ')})`);
  // Every HTTP round starts its apps afresh: `warmupSeconds` of load per route before it is measured.
  const http = {
    connections: 50,
    seconds: quick ? 2 : 5,
    warmupSeconds: quick ? 1 : 3,
    limit: 1_000_000,
    windowMs: 1_000,
  };
  return Object.freeze({
    rounds,
    httpRounds,
    quick,
    only,
    // Section 2: per round and variant, `slices` timed parts of `sliceMs` (each after a short warm-up that
    // fills the pipeline), interleaved with the other variants; every part is bounded in count as well.
    loop: { slices: 3, warmupMs: 30, sliceMs: quick ? 80 : 200, maxOps: 500_000 },
    inFlight: [1, 64, 256],
    // Section 3: autocannon per configuration and round.
    http,
    // Section 10: one connection, a closed loop timed with process.hrtime: per route and round,
    // `slices` slices of `sliceMs`, routes interleaved.
    latency: { slices: quick ? 2 : 4, sliceMs: quick ? 400 : 1_000, warmupMs: quick ? 500 : 1_500 },
    // Section 11, how cost grows: the key counts of the keys curve (BENCH_SCALE_KEYS, comma-separated),
    // the stacked-limit and batch-size steps, per point and round `slices` slices of `sliceMs`.
    scale: {
      keys: scaleKeys,
      stacked: [1, 2, 3, 4, 5],
      batchSizes: [1, 2, 4, 8, 16, 32, 64],
      memoryKeys: quick ? [1_000, 10_000] : [1_000, 10_000, 100_000],
      memoryLimits: [10, 100, 1_000],
      slices: 2,
      sliceMs: quick ? 100 : 250,
      maxOps: 400_000,
    },
    // Section 12: a 3-master cluster against one Redis, per slice `sliceMs`.
    cluster: { masters: 3, keys: quick ? 10_000 : 100_000, slices: 2, sliceMs: quick ? 200 : 500 },
    // Section 3, the guards alone: per configuration and round, `slices` runs of `decisions` guard calls,
    // as many in flight as HTTP has connections; a run that gets no answer within `timeoutMs` fails.
    guard: { inFlight: http.connections, decisions: quick ? 5_000 : 20_000, slices: 3, timeoutMs: 120_000 },
    // Sections 7–9, rate_limit_v2's two windows: the rounds that also fill the 100,000-entry log (the
    // other keys are filled every round), the keys each steady load of sections 8 and 9 spreads over
    // (each prefilled with a full window), and per load and round `slices` timed parts of `sliceMs`.
    windows: {
      largestMemoryRounds: quick ? 0 : rounds,
      timeKeys: quick ? 100 : 500,
      costKeys: quick ? 20 : 100,
      timing: { slices: 3, sliceMs: quick ? 100 : 300, maxOps: 200_000 },
    },
  });
}

/**
 * BENCH_ROUNDS (or `name`), checked like BENCH_ONLY: a typo fails here, not as a watchdog after 1 ms
 * or as 3 rounds.
 */
function roundsFromEnv(env, name = 'BENCH_ROUNDS', fallback = 3) {
  const raw = (env[name] ?? '').trim();
  if (raw === '') return fallback;
  const rounds = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(rounds >= 3))
    throw new Error(`${name}: "${raw}" is not an integer of at least 3 (a median and its spread need three rounds)`);
  return rounds;
}

/** BENCH_SCALE_KEYS: the key counts of the keys curve, ascending (default 1k, 10k, 100k, 1M; quick 1k, 10k). */
function keyCountsFromEnv(env, quick) {
  const raw = (env.BENCH_SCALE_KEYS ?? '').trim();
  if (raw === '') return quick ? [1_000, 10_000] : [1_000, 10_000, 100_000, 1_000_000];
  const counts = raw.split(',').map((part) => Number(part.trim()));
  if (counts.some((n) => !Number.isInteger(n) || n < 1 || n > 10_000_000))
    throw new Error(`BENCH_SCALE_KEYS: "${raw}" is not a list of whole numbers from 1 to 10,000,000`);
  return [...counts].sort((a, b) => a - b);
}

/**
 * A full run takes about 70 s per round here, sections 7–9 add about 15 s per round and 20 s of
 * filling, and the scale and cluster sections several minutes of filling keys (more on a busy host):
 * the watchdog allows 30 min up to 5 rounds, 3 min more per round after, 1 min per HTTP round after 5,
 * and half a minute per HTTP round for starting and warming its apps afresh.
 */
export function watchdogMs(rounds, httpRounds = rounds) {
  return (30 + 3 * Math.max(0, rounds - 5) + Math.max(0, httpRounds - 5) + httpRounds / 2) * 60_000;
}
