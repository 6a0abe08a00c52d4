// The run's settings: what the environment asks for (BENCH_ROUNDS, BENCH_QUICK, BENCH_ONLY), checked
// before anything starts, and the durations and concurrencies of the sections, which BENCH_QUICK shortens.

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
];
/** The shipped function every hand-written fcall of the report calls, with consume()'s arguments. */
export const FUNCTION = 'sliding_allow_v2';
/** How many distinct keys the "many keys" loads spread over. */
export const KEYSPACE = 100_000;

/** The settings of one run, from `env`; throws on a BENCH_ROUNDS or BENCH_ONLY it cannot use. */
export function settingsFromEnv(env = process.env) {
  const rounds = roundsFromEnv(env);
  const quick = env.BENCH_QUICK === '1';
  const only = env.BENCH_ONLY ? env.BENCH_ONLY.split(',').map((name) => name.trim()) : SECTIONS;
  for (const name of only)
    if (!SECTIONS.includes(name))
      throw new Error(`BENCH_ONLY: unknown section "${name}" (sections: ${SECTIONS.join(', ')})`);
  const http = { connections: 50, seconds: quick ? 2 : 5, warmupSeconds: 1, limit: 1_000_000, windowMs: 1_000 };
  return Object.freeze({
    rounds,
    quick,
    only,
    // Section 2: per round and variant, `slices` timed parts of `sliceMs` (each after a short warm-up that
    // fills the pipeline), interleaved with the other variants; every part is bounded in count as well.
    loop: { slices: 3, warmupMs: 30, sliceMs: quick ? 80 : 200, maxOps: 500_000 },
    inFlight: [1, 64, 256],
    // Section 3: autocannon per configuration and round.
    http,
    // Section 3 again with one connection: the latency a route's guard adds when no request queues.
    oneConnection: { seconds: quick ? 1 : 3 },
    // Section 3, the guards alone: per configuration and round, `slices` runs of `decisions` guard calls,
    // as many in flight as HTTP has connections; a run that gets no answer within `timeoutMs` fails.
    guard: { inFlight: http.connections, decisions: quick ? 5_000 : 20_000, slices: 3, timeoutMs: 120_000 },
    // Sections 7–9, rate_limit_v3's two windows: the rounds that also fill the 100,000-entry log (the
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

/** BENCH_ROUNDS, checked like BENCH_ONLY: a typo fails here, not as a watchdog after 1 ms or as 3 rounds. */
function roundsFromEnv(env) {
  const raw = (env.BENCH_ROUNDS ?? '').trim();
  if (raw === '') return 3;
  const rounds = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(rounds >= 3))
    throw new Error(
      `BENCH_ROUNDS: "${raw}" is not an integer of at least 3 (a median and its spread need three rounds)`,
    );
  return rounds;
}

/**
 * A full run takes about 70 s per round here, and sections 7–9 add about 15 s per round and 20 s of
 * filling (more on a busy host): the watchdog allows 18 min up to 5 rounds, 3 min more per round after.
 */
export function watchdogMs(rounds) {
  return (18 + 3 * Math.max(0, rounds - 5)) * 60_000;
}
