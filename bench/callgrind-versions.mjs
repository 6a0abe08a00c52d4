// Redis' instructions per decision of the assembled rate_limit_v2 against a reference library text
// for the same work, counted by callgrind (repeatable: no other work on the machine moves it). Not
// part of `npm run bench`: run it on its own, after `npm run build` (Redis under valgrind runs ~50×
// slower; about 15 minutes for every scenario).
//
//   node bench/callgrind-versions.mjs                  # every scenario, 3,000 measured decisions each
//   CALLGRIND_DECISIONS=6000 node bench/callgrind-versions.mjs log bounded
//   CALLGRIND_REFERENCE=HEAD~1 node bench/callgrind-versions.mjs      # rate_limit_v2 one commit back
//   CALLGRIND_ROUNDS=3 node bench/callgrind-versions.mjs bounded      # each variant 3 times, the least kept
//
// The reference (CALLGRIND_REFERENCE) is a library file's path, <rev>:<path> or a git revision (its
// rate_limit_v2.lua); by default the text v2 was developed as, before its parts were split out:
// 93f3717:lib/redis/lua/rate_limit_v4.lua (the same arguments and replies, under *_v4 names). The text
// measured (CALLGRIND_CANDIDATE) is lib/redis/lua/rate_limit_v2.lua assembled, unless given the same way.
//
// Each scenario runs on busy keys, as production does: KEYS keys, each at 90% of its limit on a
// synthetic clock (a request every windowMs / (0.9 × limit / cost) ms), a full window written
// first by the text measured. Then, per variant, a fresh redis-server under
// `valgrind --tool=callgrind`: prefill, zero the counters (`callgrind_control -z`), the measured
// decisions (pipelined, in time order per key), SHUTDOWN, the total of the dump. Member ids are the
// same in every variant (a fixed prefix and a counter), so each variant does the same work.
// Variants: each text with each limit's override key passed (none set: one EXISTS), and without.
// What is left of the noise (how the pipelined calls arrive, one event-loop turn more or less) only
// ever adds instructions: with CALLGRIND_ROUNDS, the variants run in turn that many times and each
// keeps its least count.
// Prints Markdown and writes bench/results/callgrind-versions-<date>.json.
//
//   CALLGRIND_SERVER=<path>/valkey-server   another server binary (Valkey's build has symbols to profile)
//   CALLGRIND_KEEP=<dir>                    keeps each variant's callgrind dump there, for callgrind_annotate
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { libraryText, startCallgrindRedis, stopAndCount, zeroCounters } from './lib/callgrind-redis.mjs';
import { installCleanup, stopAll } from './lib/processes.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const DECISIONS = Number(process.env.CALLGRIND_DECISIONS ?? 3000);
const ROUNDS = Number(process.env.CALLGRIND_ROUNDS ?? 1);
const KEYS = 100;
const T0 = 1_735_660_800_000;
const MAX_SKEW_MS = 1000;
const PIPELINE = 200;
// Lua's incremental collector runs in steps paced by the heap's size, which differs from text to
// text: without a full collection on each side of the measured decisions, each text would count a
// different share of their garbage (and of the prefill's). All libraries share one Lua heap.
const GC_LIBRARY =
  "#!lua name=bench_gc\nredis.register_function('bench_gc', function() collectgarbage('collect') return 0 end)";

/** The scenarios: one limit per decision (`batch` decisions per FCALL when set). */
const SCENARIOS = {
  log: { windowMs: 60_000, limit: 100, precisionMs: 0, cost: 1 },
  bounded: { windowMs: 60_000, limit: 100, precisionMs: 1000, cost: 1 },
  cost10: { windowMs: 60_000, limit: 1000, precisionMs: 0, cost: 10 },
  batch10: { windowMs: 60_000, limit: 100, precisionMs: 0, cost: 1, batch: 10 },
};

/** One decision's KEYS and ARGV (single call), with its limit's override key or without. */
function decisionOf(overrides, spec, key, nowMs, member) {
  const { windowMs, limit, precisionMs, cost } = spec;
  const keys = overrides ? [key, `${key}|override`] : [key];
  return { keys, args: [nowMs, member, MAX_SKEW_MS, cost, windowMs, limit, precisionMs, overrides ? 2 : 0] };
}

/** The FCALLs of requests `from` .. `to - 1` (request m goes to key m % KEYS at its key's time). */
function fcalls({ library, overrides }, spec, from, to) {
  const interval = (spec.windowMs * spec.cost) / (0.9 * spec.limit);
  const timeOf = (m) => T0 + Math.floor(Math.floor(m / KEYS) * interval);
  const keyOf = (m) => `bench:{k${m % KEYS}}`;
  const member = (m) => `Ab3dEf9h${m.toString(36)}`;
  const calls = [];
  const perCall = spec.batch ?? 1;
  for (let m = from; m < to; m += perCall) {
    const decisions = [];
    for (let j = m; j < Math.min(m + perCall, to); j++)
      decisions.push(decisionOf(overrides, spec, keyOf(j), timeOf(j), member(j)));
    if (!spec.batch) {
      const [{ keys, args }] = decisions;
      calls.push({ name: `sliding_allow_${library.version}`, keys, args, decisions: 1 });
      continue;
    }
    const keys = decisions.flatMap((d) => d.keys);
    const json = decisions.flatMap(({ args: [now, id, , cost, ...limit] }) => [now, id, cost, 1, ...limit]);
    calls.push({
      name: `sliding_allow_many_${library.version}`,
      keys,
      args: [MAX_SKEW_MS, JSON.stringify(json)],
      decisions: decisions.length,
    });
  }
  return calls;
}

/** Sends calls pipelined; returns how many decisions were admitted. Throws on an error reply. */
async function send(client, calls) {
  let admitted = 0;
  for (let at = 0; at < calls.length; at += PIPELINE) {
    const pipeline = client.pipeline();
    for (const { name, keys, args } of calls.slice(at, at + PIPELINE))
      pipeline.fcall(name, keys.length, ...keys, ...args);
    const replies = await pipeline.exec();
    for (const [[error, reply], { decisions }] of replies.map((r, i) => [r, calls[at + i]])) {
      if (error) throw error;
      const stride = (reply.length - decisions) / decisions; // per decision: allowed, then the limit's integers
      for (let d = 0; d < decisions; d++) admitted += reply[d * (stride + 1)] === 1 ? 1 : 0;
    }
  }
  return admitted;
}

/** Instructions per decision of one variant on one scenario, on a fresh server. */
async function measure(variant, spec, keepName) {
  // Work that grows with wall time, which valgrind and the machine's load stretch, is kept out of the
  // comparison of two texts: serverCron at hz 1 (not 10), no active expiry (no key expires in a run),
  // no slow log (under valgrind many calls pass its 10 ms) and no latency histograms.
  const redis = await startCallgrindRedis([
    ...['--hz', '1', '--slowlog-log-slower-than', '-1', '--latency-tracking', 'no'],
    ...['--enable-debug-command', 'local'],
  ]);
  const { client } = redis;
  await client.call('DEBUG', 'SET-ACTIVE-EXPIRE', 0);
  await client.call('FUNCTION', 'LOAD', variant.library.text);
  await client.call('FUNCTION', 'LOAD', GC_LIBRARY);
  const prefill = Math.floor((0.9 * spec.limit) / spec.cost) * KEYS;
  await send(client, fcalls(variant, spec, 0, prefill));
  await client.call('FCALL', 'bench_gc', 0);
  zeroCounters(redis);
  const admitted = await send(client, fcalls(variant, spec, prefill, prefill + DECISIONS));
  await client.call('FCALL', 'bench_gc', 0);
  const instructions = await stopAndCount(redis, keepName);
  return { decisions: DECISIONS, admitted, instructions, perDecision: Math.round(instructions / DECISIONS) };
}

const reference = libraryText(process.env.CALLGRIND_REFERENCE ?? '93f3717:lib/redis/lua/rate_limit_v4.lua');
const candidate = libraryText(
  process.env.CALLGRIND_CANDIDATE ?? join(here, '..', 'lib', 'redis', 'lua', 'rate_limit_v2.lua'),
);
const VARIANTS = {
  'reference, override keys': { library: reference, overrides: true },
  'v2, override keys': { library: candidate, overrides: true },
  'reference, no override keys': { library: reference, overrides: false },
  'v2, no override keys': { library: candidate, overrides: false },
};

installCleanup(60 * 60_000);
const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(SCENARIOS);
for (const name of chosen)
  if (!SCENARIOS[name]) throw new Error(`unknown scenario "${name}": ${Object.keys(SCENARIOS).join(', ')}`);
const results = {};
try {
  for (const scenario of chosen) {
    results[scenario] = {};
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, variant] of Object.entries(VARIANTS)) {
        const keepName = `${scenario}-${name}-${round}`.replaceAll(/,? /g, '-');
        const result = await measure(variant, SCENARIOS[scenario], keepName);
        const least = results[scenario][name];
        const rounds = [...(least?.rounds ?? []), result.perDecision];
        const kept = least && least.perDecision <= result.perDecision ? least : result;
        results[scenario][name] = { ...kept, rounds };
        process.stderr.write(`${scenario}, ${name}, round ${round}: ${result.perDecision} instructions per decision\n`);
      }
    }
  }
} finally {
  await stopAll();
}

const date = new Date().toISOString().slice(0, 10);
const texts = { reference: reference.source, candidate: candidate.source };
writeFileSync(
  join(here, 'results', `callgrind-versions-${date}.json`),
  `${JSON.stringify({ date, texts, decisions: DECISIONS, rounds: ROUNDS, keys: KEYS, scenarios: SCENARIOS, results }, null, 2)}\n`,
);
const k = (n) => `${(n / 1000).toFixed(1)}k`;
console.log(`reference: ${reference.source}; v2: ${candidate.source}\n`);
console.log('| scenario | override keys | reference | v2 | v2 / reference |');
console.log('|---|---|---|---|---|');
for (const scenario of chosen) {
  for (const keys of ['override keys', 'no override keys']) {
    const [ref, v2] = [results[scenario][`reference, ${keys}`], results[scenario][`v2, ${keys}`]];
    const ratio = (v2.perDecision / ref.perDecision).toFixed(3);
    console.log(
      `| ${scenario} | ${keys === 'override keys' ? 'yes' : 'no'} | ${k(ref.perDecision)} | ${k(v2.perDecision)} | ${ratio}× |`,
    );
  }
}
