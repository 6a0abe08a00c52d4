// Redis' instructions per decision of rate_limit_v3 and rate_limit_v2 for the same work, counted by
// callgrind (repeatable: no other work on the machine moves it). Not part of `npm run bench`: run it
// on its own (Redis under valgrind runs ~50× slower).
//
//   node bench/callgrind-versions.mjs                  # every scenario, 3,000 measured decisions each
//   CALLGRIND_DECISIONS=6000 node bench/callgrind-versions.mjs log bucketed
//
// Each scenario runs on busy keys, as production does: KEYS keys, each at 90% of its limit on a
// synthetic clock (a request every windowMs / (0.9 × limit / cost) ms), a full window written
// first by the version measured. Then, per variant, a fresh redis-server under
// `valgrind --tool=callgrind`: prefill, zero the counters (`callgrind_control -z`), the measured
// decisions (pipelined, in time order per key), SHUTDOWN, the total of the dump. Member ids are the
// same in every variant (a fixed prefix and a counter), so each variant does the same work.
// Variants: v3; v4 with each limit's override key passed (none set: one EXISTS); v4 without.
// Prints Markdown and writes bench/results/v4-vs-v3-<date>.json.
//
//   CALLGRIND_SERVER=<path>/valkey-server   another server binary (Valkey's build has symbols to profile)
//   CALLGRIND_KEEP=<dir>                    keeps each variant's callgrind dump there, for callgrind_annotate
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCallgrindRedis, stopAndCount, zeroCounters } from './lib/callgrind-redis.mjs';
import { installCleanup, stopAll } from './lib/processes.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const DECISIONS = Number(process.env.CALLGRIND_DECISIONS ?? 3000);
const KEYS = 100;
const T0 = 1_735_660_800_000;
const MAX_SKEW_MS = 1000;
const PIPELINE = 200;
const source = (version) => readFileSync(join(here, '..', 'lib', 'redis', 'lua', `rate_limit_${version}.lua`), 'utf8');

/** The scenarios: one limit per decision (`batch` decisions per FCALL when set). */
const SCENARIOS = {
  log: { windowMs: 60_000, limit: 100, precisionMs: 0, cost: 1 },
  bucketed: { windowMs: 60_000, limit: 100, precisionMs: 1000, cost: 1 },
  cost10: { windowMs: 60_000, limit: 1000, precisionMs: 0, cost: 10 },
  batch10: { windowMs: 60_000, limit: 100, precisionMs: 0, cost: 1, batch: 10 },
};

const VARIANTS = {
  v3: { version: 'v3', overrides: false },
  'v4 (override keys)': { version: 'v4', overrides: true },
  'v4 (no override keys)': { version: 'v4', overrides: false },
};

/** One decision's KEYS and ARGV for a version (single call), or its keys and JSON fields (batch). */
function decisionOf(variant, spec, key, nowMs, member) {
  const { windowMs, limit, precisionMs, cost } = spec;
  if (variant.version === 'v3') {
    return { keys: [key], args: [nowMs, member, MAX_SKEW_MS, cost, windowMs, limit, precisionMs] };
  }
  const keys = variant.overrides ? [key, `${key}|override`] : [key];
  return { keys, args: [nowMs, member, MAX_SKEW_MS, cost, windowMs, limit, precisionMs, variant.overrides ? 2 : 0] };
}

/** The FCALLs of requests `from` .. `to - 1` (request m goes to key m % KEYS at its key's time). */
function fcalls(variant, spec, from, to) {
  const interval = (spec.windowMs * spec.cost) / (0.9 * spec.limit);
  const timeOf = (m) => T0 + Math.floor(Math.floor(m / KEYS) * interval);
  const keyOf = (m) => `bench:{k${m % KEYS}}`;
  const member = (m) => `Ab3dEf9h${m.toString(36)}`;
  const calls = [];
  const perCall = spec.batch ?? 1;
  for (let m = from; m < to; m += perCall) {
    const decisions = [];
    for (let j = m; j < Math.min(m + perCall, to); j++)
      decisions.push(decisionOf(variant, spec, keyOf(j), timeOf(j), member(j)));
    if (!spec.batch) {
      const [{ keys, args }] = decisions;
      calls.push({ name: `sliding_allow_${variant.version}`, keys, args, decisions: 1 });
      continue;
    }
    const keys = decisions.flatMap((d) => d.keys);
    const json = decisions.flatMap(({ args: [now, id, , cost, ...limit] }) => [now, id, cost, 1, ...limit]);
    calls.push({
      name: `sliding_allow_many_${variant.version}`,
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
async function measure(variant, spec) {
  const redis = await startCallgrindRedis();
  const { client } = redis;
  await client.call('FUNCTION', 'LOAD', source(variant.version));
  const prefill = Math.floor((0.9 * spec.limit) / spec.cost) * KEYS;
  await send(client, fcalls(variant, spec, 0, prefill));
  zeroCounters(redis);
  const admitted = await send(client, fcalls(variant, spec, prefill, prefill + DECISIONS));
  const instructions = await stopAndCount(redis, `${variant.version}-${variant.overrides}`);
  return { decisions: DECISIONS, admitted, instructions, perDecision: Math.round(instructions / DECISIONS) };
}

installCleanup(60 * 60_000);
const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(SCENARIOS);
const results = {};
try {
  for (const scenario of chosen) {
    results[scenario] = {};
    for (const [name, variant] of Object.entries(VARIANTS)) {
      results[scenario][name] = await measure(variant, SCENARIOS[scenario]);
      process.stderr.write(`${scenario} ${name}: ${results[scenario][name].perDecision} instructions per decision\n`);
    }
  }
} finally {
  await stopAll();
}

const date = new Date().toISOString().slice(0, 10);
writeFileSync(
  join(here, 'results', `v4-vs-v3-${date}.json`),
  `${JSON.stringify({ date, decisions: DECISIONS, keys: KEYS, scenarios: SCENARIOS, results }, null, 2)}\n`,
);
const names = Object.keys(VARIANTS);
console.log(`| scenario | ${names.join(' | ')} |`);
console.log(`|---|${names.map(() => '---').join('|')}|`);
for (const scenario of chosen) {
  const base = results[scenario].v3.perDecision;
  const cells = names.map((name) => {
    const { perDecision } = results[scenario][name];
    return name === 'v3'
      ? `${(perDecision / 1000).toFixed(1)}k`
      : `${(perDecision / 1000).toFixed(1)}k (${(perDecision / base).toFixed(3)}×)`;
  });
  console.log(`| ${scenario} | ${cells.join(' | ')} |`);
}
