// npm run bench: the performance report of issue 6, against the built package (dist/).
//
// Starts its own redis-server on a free loopback port (no persistence), runs the sections below, prints
// one table and writes bench/results/<YYYY-MM-DD>.json. Every comparison is a ratio of two measurements
// taken next to each other (A/B/A/B…, order rotated per round), over ROUNDS rounds: the table shows
// the median ratio and its spread (min–max), absolute numbers only next to their ratios.
// Every child (redis-server, redis-benchmark, the Nest apps) is stopped at the end, on Ctrl-C, on a
// failure and by a watchdog.
//
// Environment: BENCH_ROUNDS (an integer, at least 3: a median and its spread need three; default 3),
// BENCH_QUICK=1 (short durations, for trying the harness), BENCH_ONLY=consume,http (run only these
// sections, of: ceiling, consume, memory, hotKey, http — which also measures the stacked limits,
// table section 6 — and guard, the guards alone without HTTP, table section "3 guard").
import { execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { compact, drive, interleaved, metricsOf, percentile, ratios, spread } from './lib/measure.mjs';
import { snapshotDist } from './lib/package-snapshot.mjs';
import { installCleanup, runCommand, startRedis, stopAll, stopChild, track } from './lib/processes.mjs';
import { callsDelta, commandCalls, commandStats, monitor, scriptCalls, scriptMicros } from './lib/redis-stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const require = createRequire(import.meta.url);
const Redis = require('ioredis').default;

const ROUNDS = roundsFromEnv();
const QUICK = process.env.BENCH_QUICK === '1';
const SECTIONS = ['ceiling', 'consume', 'memory', 'hotKey', 'http', 'guard'];
const ONLY = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',').map((name) => name.trim()) : SECTIONS;
for (const name of ONLY) if (!SECTIONS.includes(name)) throw new Error(`BENCH_ONLY: unknown section "${name}" (sections: ${SECTIONS.join(', ')})`);
// A full run takes about 70 s per round here: the watchdog allows 15 min up to 5 rounds, 2.5 min more per round after.
installCleanup((15 + 2.5 * Math.max(0, ROUNDS - 5)) * 60_000);
const DIST = await snapshotDist(root);
const { SlidingWindowLimiter } = require(DIST);

const FUNCTION = 'sliding_allow_v2';
const KEYSPACE = 100_000;
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

// Section 2: per round and variant, `slices` timed parts of `sliceMs` (each after a short warm-up that
// fills the pipeline), interleaved with the other variants; every part is bounded in count as well.
const LOOP = { slices: 3, warmupMs: 30, sliceMs: QUICK ? 80 : 200, maxOps: 500_000 };
const IN_FLIGHT = [1, 64, 256];
// Section 3: autocannon per configuration and round.
const HTTP = { connections: 50, seconds: QUICK ? 2 : 5, warmupSeconds: 1, limit: 1_000_000, windowMs: 1_000 };
// Section 3 again with one connection: the latency a route's guard adds when no request queues.
const ONE_CONNECTION = { seconds: QUICK ? 1 : 3 };
// Section 3, the guards alone: per configuration and round, `slices` runs of `decisions` guard calls,
// as many in flight as HTTP has connections; a run that gets no answer within `timeoutMs` fails.
const GUARD = { inFlight: HTTP.connections, decisions: QUICK ? 5_000 : 20_000, slices: 3, timeoutMs: 120_000 };

// Section 5: the limiter configurations of the hot-key attack. THE PLACE FOR `blockCache`: when
// SlidingWindowLimiterOptions has `blockCache`, the "on" variant is added below automatically (and
// "off" passes blockCache: false explicitly); edit the options here if the option's shape differs.
const HAS_BLOCK_CACHE = declaresBlockCache();
const HOT_KEY_VARIANTS = HAS_BLOCK_CACHE
  ? [
      { label: 'blockCache off', options: { blockCache: false }, gated: false },
      { label: 'blockCache on', options: { blockCache: true }, gated: true },
    ]
  : [{ label: 'no blockCache option in this build', options: {}, gated: true }];
const ATTACK = { limit: 10, windowMs: 10_000, requests: 20_000, inFlight: 64 };

const rows = [];
// Other work on the machine skews every number: the load average is recorded next to them.
const loadAtStart = os.loadavg().map((n) => Number(n.toFixed(2)));
const results = { sections: {} };

/** One line of the table. `value` is the median (and spread) of what the row compares. */
function row(section, what, { value, spread: s, unit = '×', digits = 3, absolute = '', target = '', pass, note = '' }) {
  if (s) s = { ...s, samples: s.samples.map((n) => Number(n.toPrecision(6))) };
  const format = (n) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));
  const measured = s?.median ?? value;
  const shown = measured === undefined ? '—' : `${format(measured)}${unit === '×' ? '×' : unit ? ` ${unit}` : ''}`;
  const range = s ? `${format(s.min)}–${format(s.max)}` : '';
  const result = pass === undefined ? '' : pass ? 'PASS' : 'FAIL';
  rows.push({ section, what, value: shown, range, absolute: note || absolute, target, result, samples: s?.samples });
}

/** BENCH_ROUNDS, checked like BENCH_ONLY: a typo fails here, not as a watchdog after 1 ms or as 3 rounds. */
function roundsFromEnv() {
  const raw = (process.env.BENCH_ROUNDS ?? '').trim();
  if (raw === '') return 3;
  const rounds = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(rounds >= 3)) throw new Error(`BENCH_ROUNDS: "${raw}" is not an integer of at least 3 (a median and its spread need three rounds)`);
  return rounds;
}

function declaresBlockCache() {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.name.endsWith('.d.ts')) files.push(join(dir, entry.name));
    }
  };
  walk(DIST);
  // Declared on SlidingWindowLimiterOptions or on a type it extends: any declaration in dist counts.
  return files.some((file) => /\bblockCache\??\s*:/.test(readFileSync(file, 'utf8')));
}

/** What a decision of ours counts as: admitted, rejected, or decided without Redis (fallback policy). */
function outcomeOf(decision) {
  return decision.degraded ? 'degraded' : decision.allowed;
}

function memberSource() {
  const prefix = randomBytes(6).toString('base64url');
  let counter = 0;
  return () => prefix + (counter++).toString(36);
}

function machine(redisVersion) {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const versionOf = (name) => {
    try {
      return require(`${name}/package.json`).version;
    } catch {
      return 'not installed';
    }
  };
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return 'unknown';
    }
  };
  return {
    commit: git('rev-parse', 'HEAD'),
    uncommittedLibChanges: git('status', '--porcelain', '--', 'lib') !== '',
    nproc: os.availableParallelism(),
    loadAverageAtStart: loadAtStart,
    loadAverageAtEnd: os.loadavg().map((n) => Number(n.toFixed(2))),
    cpu: cpuinfo.match(/^model name\s*:\s*(.+)$/m)?.[1] ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    redis: redisVersion,
    packages: Object.fromEntries(
      ['ioredis', '@nestjs/core', '@nestjs/platform-express', 'rate-limiter-flexible', 'autocannon', '@nestjs/throttler', '@nest-lab/throttler-storage-redis', '@nestjs-redis/throttler-storage', 'redis'].map((name) => [name, versionOf(name)]),
    ),
  };
}

function log(message) {
  process.stderr.write(`${message}\n`);
}

// ---------------------------------------------------------------------------------------------------
// 1. The ceiling: redis-benchmark running sliding_allow_v2 directly, next to a bare ioredis loop.

async function sectionCeiling(port, client) {
  log('1/6 ceiling: redis-benchmark FCALL, -P 16 and -c 50, next to a bare ioredis fcall loop');
  const benchmark = async (pipeline) => {
    // A fixed numeric now_ms per run: redis-benchmark cannot send a clock, and the argument shape
    // (number, short member, skew, window, limit) is the one consume() sends.
    const requests = QUICK ? 30_000 : pipeline ? 120_000 : 60_000;
    const args = ['-h', '127.0.0.1', '-p', String(port), '-c', '50', '-n', String(requests), '-r', String(KEYSPACE), '--csv'];
    if (pipeline) args.push('-P', '16');
    args.push('FCALL', FUNCTION, '1', 's1:rb:__rand_int__', String(Date.now()), 'm__rand_int__', '1000', '60000', '1000');
    const csv = (await runCommand('redis-benchmark', args, 120_000)).trim().split('\n');
    return Number(JSON.parse(`[${csv[csv.length - 1]}]`)[1]);
  };
  const next = memberSource();
  const bare = (i) => client.fcall(FUNCTION, 1, `s1:bare:${i % KEYSPACE}`, Date.now(), next(), 1000, 60_000, 1000).then((r) => r[0] === 1);
  const variants = {
    pipelined: () => benchmark(true),
    unpipelined: () => benchmark(false),
    bare64: async () => (await drive({ inFlight: 64, warmupMs: 200, durationMs: QUICK ? 500 : 1800, maxOps: 1_000_000, call: bare })).perSecond,
  };
  const samples = { pipelined: [], unpipelined: [], bare64: [] };
  const names = Object.keys(variants);
  await client.config('RESETSTAT');
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of interleaved(names, 1, round)) samples[name][round] = await variants[name]();
  }
  const med = Object.fromEntries(names.map((name) => [name, spread(samples[name]).median]));
  // Where Redis spends a decision: the function's total time and the commands it runs inside.
  const usec = await commandStats(client);
  const fcall = usec.fcall;
  const inner = Object.entries(usec).filter(([name]) => name !== 'fcall' && name !== 'info' && !name.startsWith('config'));
  const innerUsec = inner.reduce((sum, [, v]) => sum + v.usec, 0);
  const perDecision = Object.fromEntries(inner.map(([name, v]) => [name, Number((v.usec / fcall.calls).toFixed(2))]));
  results.sections.ceiling = { samples, serverMicrosPerDecision: Number((fcall.usec / fcall.calls).toFixed(2)), innerMicrosPerDecision: perDecision };
  row('1 ceiling', 'redis-benchmark -P 16 / -c 50 (pipelined / not)', {
    spread: spread(ratios(samples.pipelined, samples.unpipelined)),
    absolute: `${compact(med.pipelined)}/s vs ${compact(med.unpipelined)}/s`,
  });
  row('1 ceiling', 'Redis time in the commands a decision runs / its whole FCALL', {
    value: innerUsec / fcall.usec,
    absolute: `${(fcall.usec / fcall.calls).toFixed(2)} µs per FCALL; ${Object.entries(perDecision)
      .map(([name, v]) => `${name} ${v}`)
      .join(', ')}`,
  });
  row('1 ceiling', 'bare ioredis fcall, 64 in flight / redis-benchmark -P 16', {
    spread: spread(ratios(samples.bare64, samples.pipelined)),
    absolute: `${compact(med.bare64)}/s vs ${compact(med.pipelined)}/s`,
  });
  row('1 ceiling', 'bare ioredis fcall, 64 in flight / redis-benchmark -c 50', {
    spread: spread(ratios(samples.bare64, samples.unpipelined)),
    absolute: `${compact(med.bare64)}/s vs ${compact(med.unpipelined)}/s`,
  });
}

// ---------------------------------------------------------------------------------------------------
// 2. consume() against a bare ioredis fcall loop and rate-limiter-flexible, with and without
//    ioredis auto-pipelining.

const KEY_CASES = [
  { id: 'keys', label: '100k keys', limit: 1000, windowMs: 60_000, key: (i) => `k${i % KEYSPACE}` },
  { id: 'hot', label: 'hot key admitting', limit: 1_000_000, windowMs: 1_000, key: () => 'hot' },
  { id: 'reject', label: 'hot key rejecting', limit: 10, windowMs: 600_000, key: () => 'full' },
];

async function sectionConsume(plain, autoPipelined) {
  log('2/6 consume(): bare fcall, ours, rate-limiter-flexible; auto-pipelining off/on');
  const { RateLimiterRedis, RateLimiterRes } = require('rate-limiter-flexible');
  const limiters = {};
  // ours / oursAP: the limiter with its defaults; oursNoCache: blockCache off, where it can matter;
  // oursUnbatched: batch off (one call per decision), over the 100k keys.
  const builds = [
    ['ours', plain, {}],
    ['oursAP', autoPipelined, {}],
    ...(HAS_BLOCK_CACHE ? [['oursNoCache', plain, { blockCache: false }]] : []),
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
    KEY_CASES.map((c) => [c.id, new RateLimiterRedis({ storeClient: plain, keyPrefix: `s2:rlf:${c.id}`, points: c.limit, duration: c.windowMs / 1000 })]),
  );
  const bareCall = (client, name, c) => {
    const next = memberSource();
    const prefix = `s2:${name}:${c.id}:`;
    // What a hand-written caller sends: same function, same argument list as consume().
    return (i) => client.fcall(FUNCTION, 1, prefix + c.key(i), Date.now(), next(), 1000, c.windowMs, c.limit).then((reply) => reply[0] === 1);
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
    ...(HAS_BLOCK_CACHE && c.id === 'reject' ? ['oursNoCache'] : []),
    ...(c.id === 'keys' ? ['oursUnbatched'] : []),
  ];
  const perCase = Object.fromEntries(KEY_CASES.map((c) => [c.id, calls(c)]));

  // JIT warm-up of every path, and the rejecting keys filled to their limit.
  for (const c of KEY_CASES) {
    for (const name of variantsOf(c)) await drive({ inFlight: 64, warmupMs: 0, durationMs: QUICK ? 50 : 200, maxOps: 200_000, call: perCase[c.id][name] });
  }

  const samples = {};
  const outcomes = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of KEY_CASES) {
      const variantNames = variantsOf(c);
      for (const inFlight of IN_FLIGHT) {
        const cell = `${c.id}@${inFlight}`;
        samples[cell] ??= Object.fromEntries(variantNames.map((name) => [name, []]));
        outcomes[cell] ??= Object.fromEntries(variantNames.map((name) => [name, { admitted: 0, rejected: 0, degraded: 0 }]));
        // Fine-grained alternation (A B C D E, B C D E A, …) so that bursts of other work on the
        // machine hit every variant alike; a round's rate per variant = its calls / its time.
        const totals = Object.fromEntries(variantNames.map((name) => [name, { counted: 0, seconds: 0 }]));
        for (const name of interleaved(variantNames, LOOP.slices, round)) {
          const r = await drive({ inFlight, warmupMs: LOOP.warmupMs, durationMs: LOOP.sliceMs, maxOps: LOOP.maxOps, call: perCase[c.id][name] });
          if (r.errors > 0) throw new Error(`section 2 ${name} ${cell}: ${r.errors} errors, first: ${r.firstError?.stack ?? r.firstError}`);
          totals[name].counted += r.counted;
          totals[name].seconds += r.seconds;
          outcomes[cell][name].admitted += r.admitted;
          outcomes[cell][name].rejected += r.rejected;
          outcomes[cell][name].degraded += r.degraded;
        }
        for (const name of variantNames) samples[cell][name][round] = totals[name].counted / totals[name].seconds;
      }
    }
    log(`  round ${round + 1}/${ROUNDS} done`);
  }
  // Redis time per decision (all script calls' time / decisions), each variant on its own over the
  // 100k keys at 64 in flight: what one decision costs the server, batched or not. Variants take
  // turns within a round (order rotated per round), so each ratio pairs runs made together.
  const keysCase = KEY_CASES.find((c) => c.id === 'keys');
  const timedVariants = ['bare', 'ours', 'oursUnbatched', 'rlf'];
  const redisMicros = Object.fromEntries(timedVariants.map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of interleaved(timedVariants, 1, round)) {
      await plain.config('RESETSTAT');
      const r = await drive({ inFlight: 64, warmupMs: 0, durationMs: QUICK ? 100 : 300, maxOps: LOOP.maxOps, call: perCase.keys[name] });
      redisMicros[name][round] = scriptMicros(await commandStats(plain)) / (r.admitted + r.rejected);
    }
  }
  for (const limiter of Object.values(limiters)) limiter.close?.();
  const micros = (name) => spread(redisMicros[name]).median;
  row('2 consume', 'Redis time per decision: consume() / bare fcall (100k keys, 64 in flight)', {
    spread: spread(ratios(redisMicros.ours, redisMicros.bare)),
    absolute: `${micros('ours').toFixed(2)} µs vs ${micros('bare').toFixed(2)} µs; batch off ${micros('oursUnbatched').toFixed(2)} µs (INFO commandstats)`,
  });
  row('2 consume', 'Redis time per decision: consume() / rate-limiter-flexible', {
    spread: spread(ratios(redisMicros.ours, redisMicros.rlf)),
    absolute: `${micros('ours').toFixed(2)} µs vs ${micros('rlf').toFixed(2)} µs`,
  });
  results.sections.redisMicrosPerDecision = { ...redisMicros, case: keysCase.label };
  results.sections.consume = { loop: LOOP, cases: KEY_CASES.map(({ id, label, limit, windowMs }) => ({ id, label, limit, windowMs })), samples, outcomes };

  const targets = {};
  for (const c of KEY_CASES) {
    const variantNames = variantsOf(c);
    for (const inFlight of IN_FLIGHT) {
      const cell = `${c.id}@${inFlight}`;
      const s = samples[cell];
      const med = Object.fromEntries(variantNames.map((name) => [name, spread(s[name]).median]));
      const where = `${c.label}, ${inFlight} in flight`;
      const expectAdmit = c.id !== 'reject';
      for (const name of variantNames) {
        const o = outcomes[cell][name];
        if (o.degraded > 0 || (expectAdmit ? o.rejected > 0 : o.admitted > 0)) {
          log(`  warning: ${name} ${cell} admitted ${o.admitted}, rejected ${o.rejected}, decided without Redis ${o.degraded}`);
        }
      }
      const vsBare = spread(ratios(s.ours, s.bare));
      const vsFlexible = spread(ratios(s.ours, s.rlf));
      const gated = c.id === 'keys' && inFlight === 64;
      if (gated) targets.consume = { vsBare, vsFlexible };
      const fallbacks = outcomes[cell].ours.degraded + outcomes[cell].oursAP.degraded;
      row('2 consume', `consume() / bare fcall — ${where}`, {
        spread: vsBare,
        absolute: `${compact(med.ours)}/s vs ${compact(med.bare)}/s${fallbacks ? `; ${fallbacks} decided without Redis (timeout)` : ''}`,
        ...(gated ? { target: '≥ 0.95×', pass: vsBare.median >= 0.95 } : {}),
      });
      row('2 consume', `consume() / rate-limiter-flexible — ${where}`, {
        spread: vsFlexible,
        absolute: `${compact(med.ours)}/s vs ${compact(med.rlf)}/s`,
        ...(gated ? { target: '≥ 1.15×', pass: vsFlexible.median >= 1.15 } : {}),
      });
      if (s.oursUnbatched) {
        row('2 consume', `consume() batch off / bare fcall — ${where}`, {
          spread: spread(ratios(s.oursUnbatched, s.bare)),
          absolute: `${compact(spread(s.oursUnbatched).median)}/s vs ${compact(med.bare)}/s`,
        });
      }
      if (s.oursNoCache) {
        row('2 consume', `consume() blockCache off / bare fcall — ${where}`, {
          spread: spread(ratios(s.oursNoCache, s.bare)),
          absolute: `${compact(spread(s.oursNoCache).median)}/s vs ${compact(med.bare)}/s`,
        });
      }
      row('2 consume', `bare fcall, auto-pipelining on / off — ${where}`, {
        spread: spread(ratios(s.bareAP, s.bare)),
        absolute: `${compact(med.bareAP)}/s vs ${compact(med.bare)}/s`,
      });
      row('2 consume', `consume(), auto-pipelining on / off — ${where}`, {
        spread: spread(ratios(s.oursAP, s.ours)),
        absolute: `${compact(med.oursAP)}/s vs ${compact(med.ours)}/s`,
      });
    }
  }
  return targets;
}

// ---------------------------------------------------------------------------------------------------
// 3. and 6. HTTP: the same route with no guard, our guard and @nestjs/throttler + two Redis storages;
//    then (section `guard`) the same guards called without HTTP.

const HTTP_CONFIGS = [
  { id: 'none', label: 'no guard', packages: [] },
  { id: 'ours', label: 'our guard', packages: [] },
  { id: 'ours-client', label: "our guard on the user's ioredis client", packages: [] },
  { id: 'nest-lab', label: '@nestjs/throttler + @nest-lab/throttler-storage-redis', packages: ['@nestjs/throttler', '@nest-lab/throttler-storage-redis'] },
  { id: 'nestjs-redis', label: '@nestjs/throttler + @nestjs-redis/throttler-storage', packages: ['@nestjs/throttler', '@nestjs-redis/throttler-storage', 'redis'] },
];

/** Starts http-app.mjs for `config`: listening on a port, or with `mode` 'guard' the guard alone (no HTTP). */
function startApp(config, redisPort, mode = 'http') {
  return new Promise((resolve, reject) => {
    const child = track(
      fork(join(here, 'http-app.mjs'), [config, String(redisPort), String(HTTP.limit), String(HTTP.windowMs), mode], {
        execArgv: [],
        env: { ...process.env, BENCH_DIST: DIST },
        stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      }),
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      reject(new Error(`app "${config}" did not start within 30 s\n${stderr}`));
      // Not left running (and loading the machine) until the end of the whole run.
      stopChild(child);
    }, 30_000);
    child.once('message', (message) => {
      clearTimeout(timer);
      resolve({ child, port: message.port, stderr: () => stderr });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`app "${config}" exited with ${code}\n${stderr.trim().split('\n').slice(0, 8).join('\n')}`));
    });
  });
}

/** A bucket that several autocannon runs add to: 2xx count, time, latencies of 2xx responses. */
function httpSink() {
  return { ok: 0, seconds: 0, cpuSeconds: 0, redisCpuSeconds: 0, gcMs: 0, gcLongestMs: 0, non2xx: 0, errors: 0, count: 0, latencies: new Float64Array(1_000_000) };
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
function cpuSecondsOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[11], fields[12]: utime and stime (the 14th and 15th of the whole line), in clock ticks.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

function summary(sink) {
  return {
    rps: sink.ok / sink.seconds,
    // The app's own CPU per answered request: steadier than requests/s on a shared machine.
    cpuMicros: (sink.cpuSeconds * 1e6) / sink.ok,
    // Redis' CPU per answered request: the guard's cost that the app's CPU does not show.
    redisCpuMicros: (sink.redisCpuSeconds * 1e6) / sink.ok,
    // The app's garbage-collection pauses: every request in the app waits through them.
    gcMsPerSecond: sink.gcMs / sink.seconds,
    gcLongestMs: sink.gcLongestMs,
    ok: sink.ok,
    non2xx: sink.non2xx,
    errors: sink.errors,
    p50: percentile(sink.latencies, sink.count, 50),
    p99: percentile(sink.latencies, sink.count, 99),
  };
}

/** One autocannon run; `x-client-id` differs per connection, so each connection is one client. */
async function autocannonRun(url, options, sink = httpSink()) {
  const autocannon = require('autocannon');
  let client = 0;
  const instance = autocannon({
    url,
    connections: options.connections,
    ...(options.amount ? { amount: options.amount } : { duration: options.seconds }),
    setupClient: (c) => c.setHeaders({ 'x-client-id': `c${client++}` }),
  });
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300 && sink.count < sink.latencies.length) sink.latencies[sink.count++] = responseTime;
  });
  const result = await instance;
  sink.ok += result['2xx'];
  sink.seconds += result.duration;
  sink.non2xx += result.non2xx;
  sink.errors += result.errors + result.timeouts;
  return summary(sink);
}

/** The GC pauses of an app in HTTP mode so far; `longestMs` since the previous call (see http-app.mjs). */
async function gcOf(app) {
  return (await askApp(app, { gc: true }, 10_000)).gc;
}

/**
 * One second of autocannon at `app`'s `GET /`, added to `sink` with the CPU time of the app and of
 * Redis (process `redisPid`) and the app's GC pauses over it.
 */
async function httpSlice(app, redisPid, sink, connections) {
  const gcBefore = await gcOf(app);
  const cpuBefore = cpuSecondsOf(app.child.pid);
  const redisCpuBefore = cpuSecondsOf(redisPid);
  await autocannonRun(`http://127.0.0.1:${app.port}/`, { connections, seconds: 1 }, sink);
  sink.cpuSeconds += cpuSecondsOf(app.child.pid) - cpuBefore;
  sink.redisCpuSeconds += cpuSecondsOf(redisPid) - redisCpuBefore;
  const gcAfter = await gcOf(app);
  sink.gcMs += gcAfter.pauseMs - gcBefore.pauseMs;
  sink.gcLongestMs = Math.max(sink.gcLongestMs, gcAfter.longestMs);
}

/**
 * `ROUNDS` rounds of `seconds` one-second slices per app at `connections`, interleaved (as in
 * section 2): `samples[id][round]` = summary().
 */
async function httpRounds(apps, redisPid, seconds, connections) {
  const ids = Object.keys(apps);
  const samples = Object.fromEntries(ids.map((id) => [id, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const sinks = Object.fromEntries(ids.map((id) => [id, httpSink()]));
    for (const id of interleaved(ids, seconds, round)) await httpSlice(apps[id], redisPid, sinks[id], connections);
    for (const id of ids) {
      const r = summary(sinks[id]);
      if (r.non2xx > 0 || r.errors > 0) log(`  warning: ${id} round ${round + 1}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      samples[id][round] = r;
    }
    log(`  round ${round + 1}/${ROUNDS} done (${connections} connection${connections === 1 ? '' : 's'})`);
  }
  return samples;
}

/**
 * Starts http-app.mjs for each of `configs` (in `mode`, see startApp): `{ apps, unavailable }`, the
 * second saying why a configuration is missing (a package not installed, or the app failed to start).
 */
async function startApps(configs, redisPort, mode = 'http') {
  const apps = {};
  const unavailable = {};
  for (const config of configs) {
    const missing = config.packages.filter((name) => {
      try {
        require.resolve(name);
        return false;
      } catch {
        return true;
      }
    });
    if (missing.length > 0) {
      unavailable[config.id] = `not installable: ${missing.join(', ')} missing`;
      continue;
    }
    try {
      apps[config.id] = await startApp(config.id, redisPort, mode);
    } catch (error) {
      unavailable[config.id] = `failed to start: ${error.message.split('\n')[0]}`;
      log(`  ${config.id}${mode === 'http' ? '' : ` (${mode})`}: ${error.message}`);
    }
  }
  return { apps, unavailable };
}

async function sectionHttp(redisPort, redisPid, stats) {
  log(`3/6 HTTP: autocannon, ${HTTP.connections} connections, ${HTTP.seconds} s × ${ROUNDS} rounds per configuration`);
  const { apps, unavailable } = await startApps(HTTP_CONFIGS, redisPort);
  const ids = Object.keys(apps);
  for (const id of ids) await autocannonRun(`http://127.0.0.1:${apps[id].port}/`, { connections: HTTP.connections, seconds: HTTP.warmupSeconds });
  const samples = await httpRounds(apps, redisPid, HTTP.seconds, HTTP.connections);
  log(`  the same routes with 1 connection, ${ONE_CONNECTION.seconds} s × ${ROUNDS} rounds per configuration`);
  // The user's-client variant only repeats `ours` here; left out to keep the run short.
  const oneConnection = await httpRounds(Object.fromEntries(Object.entries(apps).filter(([id]) => id !== 'ours-client')), redisPid, ONE_CONNECTION.seconds, 1);
  results.sections.http = {
    settings: { ...HTTP, oneConnectionSeconds: ONE_CONNECTION.seconds },
    key: 'header x-client-id, one value per autocannon connection',
    samples,
    oneConnection,
    unavailable,
  };

  const http = metricsOf(samples);
  const { metric, med } = http;
  const one = metricsOf(oneConnection);
  // `id` minus `other` in latency percentiles, round by round, from `m` = metricsOf(…); returns them.
  const latencyRows = (m, id, other, label, { percentiles = ['p99'], suffix = `, ${HTTP.connections} connections`, target = false } = {}) =>
    Object.fromEntries(
      percentiles.map((p) => {
        const others = m.metric(other, p);
        const difference = spread(m.metric(id, p).map((v, i) => v - others[i]));
        row('3 http', `${label}, ${p} latency${suffix}`, {
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
    const redis = metric(id, 'redisCpuMicros');
    return metric(id, 'cpuMicros').map((app, i) => app + redis[i]);
  };
  const cpuWithRedisRow = (id, other, label) => {
    const parts = (x) => `${x} ${med(x, 'cpuMicros').toFixed(0)} + ${med(x, 'redisCpuMicros').toFixed(0)} µs`;
    row('3 http', `${label}, app + Redis CPU per request`, { spread: spread(ratios(cpuWithRedis(id), cpuWithRedis(other))), absolute: `${parts(id)} vs ${parts(other)}` });
  };
  const targets = {};
  const fmt = (id) => `${compact(med(id, 'rps'))} rps, p50 ${med(id, 'p50').toFixed(2)} / p99 ${med(id, 'p99').toFixed(2)} ms`;
  if (apps.none && apps.ours) {
    const vsNone = spread(ratios(metric('ours', 'rps'), metric('none', 'rps')));
    targets.vsNone = vsNone;
    row('3 http', 'our guard / no guard, requests/s', { spread: vsNone, absolute: `ours ${fmt('ours')}, none ${fmt('none')}`, target: '≥ 0.92×', pass: vsNone.median >= 0.92 });
    targets.p99 = latencyRows(http, 'ours', 'none', 'our guard − no guard', { percentiles: ['p99', 'p50'], target: true }).p99;
    latencyRows(one, 'ours', 'none', 'our guard − no guard', { percentiles: ['p99', 'p50'], suffix: ', 1 connection' });
    const cpu = spread(ratios(metric('ours', 'cpuMicros'), metric('none', 'cpuMicros')));
    row('3 http', 'our guard / no guard, app CPU per request', {
      spread: cpu,
      absolute: `${med('ours', 'cpuMicros').toFixed(0)} µs vs ${med('none', 'cpuMicros').toFixed(0)} µs`,
    });
    cpuWithRedisRow('ours', 'none', 'our guard / no guard');
    const gcPauses = (id) => `${id} ${med(id, 'gcMsPerSecond').toFixed(0)} ms/s (longest ${med(id, 'gcLongestMs').toFixed(1)} ms)`;
    row('3 http', 'our guard / no guard, app GC pauses per second of load', {
      spread: spread(ratios(metric('ours', 'gcMsPerSecond'), metric('none', 'gcMsPerSecond'))),
      absolute: `${gcPauses('ours')} vs ${gcPauses('none')}`,
    });
  } else {
    row('3 http', 'our guard / no guard', { note: unavailable.ours ?? unavailable.none, pass: false, target: '≥ 0.92×' });
  }
  if (apps['ours-client'] && apps.ours) {
    row('3 http', "our guard: user's client / module's connection, requests/s", {
      spread: spread(ratios(metric('ours-client', 'rps'), metric('ours', 'rps'))),
      absolute: `ours-client ${fmt('ours-client')}`,
    });
    row('3 http', "our guard: user's client / module's connection, app CPU per request", {
      spread: spread(ratios(metric('ours-client', 'cpuMicros'), metric('ours', 'cpuMicros'))),
      absolute: `${med('ours-client', 'cpuMicros').toFixed(0)} µs vs ${med('ours', 'cpuMicros').toFixed(0)} µs`,
    });
  }
  for (const config of HTTP_CONFIGS.filter((c) => c.packages.length > 0)) {
    if (!apps[config.id] || !apps.ours) {
      row('3 http', `our guard / ${config.label}`, { note: unavailable[config.id] ?? unavailable.ours, target: '≥ 1.05×' });
      continue;
    }
    const vs = spread(ratios(metric('ours', 'rps'), metric(config.id, 'rps')));
    targets[config.id] = vs;
    row('3 http', `our guard / ${config.label}, requests/s`, { spread: vs, absolute: `${config.id} ${fmt(config.id)}`, target: '≥ 1.05×', pass: vs.median >= 1.05 });
    cpuWithRedisRow('ours', config.id, `our guard / ${config.label}`);
    latencyRows(http, 'ours', config.id, `our guard − ${config.label}`);
    latencyRows(one, 'ours', config.id, `our guard − ${config.label}`, { suffix: ', 1 connection' });
    if (apps.none) {
      row('3 http', `${config.label} / no guard, requests/s`, { spread: spread(ratios(metric(config.id, 'rps'), metric('none', 'rps'))) });
    }
  }

  // 6. Stacked limits on one handler: round trips per request, counted by the server.
  log('6/6 stacked limits: Redis round trips per request');
  if (apps.ours) {
    const perRoute = {};
    for (const route of ['/', '/stacked']) {
      perRoute[route] = { roundTrips: [], decisions: [] };
      for (let round = 0; round < ROUNDS; round++) {
        const watch = await monitor(redisPort, [stats.stream.localPort]);
        const before = await commandCalls(stats);
        const r = await autocannonRun(`http://127.0.0.1:${apps.ours.port}${route}`, { connections: 10, amount: QUICK ? 500 : 2000 });
        const delta = callsDelta(before, await commandCalls(stats));
        const seen = await watch.stop();
        perRoute[route].roundTrips.push(seen.client / r.ok);
        perRoute[route].decisions.push(scriptCalls(delta) / r.ok);
        perRoute[route].requests = (perRoute[route].requests ?? 0) + r.ok;
        perRoute[route].background = (perRoute[route].background ?? 0) + seen.background;
        perRoute[route].byCommand ??= {};
        for (const [command, n] of Object.entries(seen.byCommand)) perRoute[route].byCommand[command] = (perRoute[route].byCommand[command] ?? 0) + n;
        if (r.non2xx > 0 || r.errors > 0) log(`  warning: stacked ${route}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      }
    }
    results.sections.stacked = perRoute;
    const stacked = spread(perRoute['/stacked'].roundTrips);
    targets.stacked = stacked;
    const commands = (route) =>
      `${perRoute[route].requests} requests, commands sent: ${JSON.stringify(perRoute[route].byCommand)}` +
      (perRoute[route].background ? `; plus ${perRoute[route].background} instance-report write(s), not per request` : '');
    row('6 stacked', 'two @SlidingLimit on one route: round trips / request', {
      spread: stacked,
      unit: '',
      absolute: commands('/stacked'),
      target: '= 1',
      pass: stacked.max <= 1,
    });
    row('6 stacked', 'one @SlidingLimit (same app): round trips / request', {
      spread: spread(perRoute['/'].roundTrips),
      unit: '',
      absolute: commands('/'),
    });
  } else {
    row('6 stacked', 'two @SlidingLimit on one route: round trips / request', { note: unavailable.ours, target: '= 1', pass: false });
  }
  for (const app of Object.values(apps)) await stopChild(app.child);
  return targets;
}

/**
 * Sends `message` to an app started by startApp and resolves with its one reply. Rejects when the app
 * answers `{ error }`, exits, or gives no answer within `timeoutMs`.
 */
function askApp(app, message, timeoutMs) {
  const { child } = app;
  return new Promise((resolve, reject) => {
    const settle = (fn, value) => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      fn(value);
    };
    const onMessage = (reply) => (reply.error ? settle(reject, new Error(reply.error)) : settle(resolve, reply));
    const onExit = (code, signal) => settle(reject, new Error(`exited with ${signal ?? code}\n${app.stderr().trim().split('\n').slice(0, 8).join('\n')}`.trim()));
    const timer = setTimeout(() => settle(reject, new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    child.on('message', onMessage);
    child.once('exit', onExit);
    // A child that exited while no question was pending: the channel is closed and no 'exit' follows.
    child.send(message, (error) => error && settle(reject, error));
  });
}

/**
 * The guards without HTTP: each configuration's guard called in its own process, GUARD.inFlight at a
 * time, configurations interleaved in slices as above. What Express costs per request (most of it) is
 * left out, so this shows what the guard, its storage and its Redis client cost. Runs after the HTTP
 * section has stopped its apps, so that no idle app shares the machine with it. A configuration whose
 * run fails is stopped and left out; the others go on.
 */
async function sectionGuard(redisPort) {
  const configs = HTTP_CONFIGS.filter((c) => c.id !== 'none' && c.id !== 'ours-client');
  log(`3/6 the guards alone (no HTTP, ${GUARD.inFlight} in flight): ${configs.map((c) => c.id).join(', ')}`);
  const { apps, unavailable } = await startApps(configs, redisPort, 'guard');
  const drop = async (id, error) => {
    log(`  ${id} (guard alone): left out, ${error.message}`);
    unavailable[id] = `failed: ${error.message.split('\n')[0]}`;
    const { child } = apps[id];
    delete apps[id];
    await stopChild(child);
  };
  /** One run of `id`'s guard (GUARD.decisions calls, see http-app.mjs), or undefined once it has failed (and was dropped). */
  const run = (id) => askApp(apps[id], { run: GUARD.decisions, inFlight: GUARD.inFlight }, GUARD.timeoutMs).catch((error) => drop(id, error));

  // Warm-up: one run each (JIT, connections, the limiter's library load).
  for (const id of Object.keys(apps)) await run(id);
  const ids = Object.keys(apps);
  const samples = Object.fromEntries(ids.map((id) => [id, []]));
  for (let round = 0; round < ROUNDS && apps.ours; round++) {
    const sums = Object.fromEntries(ids.map((id) => [id, { decisions: 0, seconds: 0, cpuSeconds: 0 }]));
    for (const id of interleaved(ids, GUARD.slices, round)) {
      if (!apps[id]) continue;
      const r = await run(id);
      if (!r) continue;
      for (const name of ['decisions', 'seconds', 'cpuSeconds']) sums[id][name] += r[name];
    }
    for (const id of Object.keys(apps)) {
      samples[id][round] = { perSecond: sums[id].decisions / sums[id].seconds, cpuMicros: (sums[id].cpuSeconds * 1e6) / sums[id].decisions };
    }
  }
  for (const app of Object.values(apps)) await stopChild(app.child);
  // Only configurations measured in every round are compared.
  for (const id of ids) if (!apps[id]) delete samples[id];
  results.sections.guardAlone = { decisionsPerSlice: GUARD.decisions, slices: GUARD.slices, inFlight: GUARD.inFlight, samples, unavailable };

  if (!apps.ours) {
    row('3 guard', 'our guard / the others', { note: unavailable.ours });
    return;
  }
  const { metric, med } = metricsOf(samples);
  for (const config of configs.filter((c) => c.id !== 'ours')) {
    if (!apps[config.id]) {
      row('3 guard', `our guard / ${config.label}`, { note: unavailable[config.id] });
      continue;
    }
    row('3 guard', `our guard / ${config.label}, decisions/s`, {
      spread: spread(ratios(metric('ours', 'perSecond'), metric(config.id, 'perSecond'))),
      absolute: `${compact(med('ours', 'perSecond'))}/s vs ${compact(med(config.id, 'perSecond'))}/s`,
    });
    row('3 guard', `our guard / ${config.label}, CPU per decision`, {
      spread: spread(ratios(metric('ours', 'cpuMicros'), metric(config.id, 'cpuMicros'))),
      absolute: `${med('ours', 'cpuMicros').toFixed(1)} µs vs ${med(config.id, 'cpuMicros').toFixed(1)} µs`,
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// 4. Memory per key, filled through consume() with the limiter's own members.

async function sectionMemory(client) {
  log('4/6 memory per key');
  const LIMITS = [10, 100, 128, 129, 1000];
  const limiter = new SlidingWindowLimiter({ client, keyPrefix: 'rl:' });
  await limiter.init();
  const measured = {};
  let fallbacks = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const limit of LIMITS) {
      const key = `mem${round}:{ip:10.0.${limit >> 8}.${limit & 255}}`;
      const rule = { limit, windowMs: 3_600_000 };
      for (let i = 0; i < limit; i++) if ((await limiter.consume(key, rule)).degraded) fallbacks++;
      measured[limit] ??= { bytes: [], encoding: undefined };
      measured[limit].bytes.push(await client.memory('USAGE', `rl:${key}`, 'SAMPLES', 0));
      measured[limit].encoding = await client.object('ENCODING', `rl:${key}`);
    }
  }
  // The member format of the script articles (<ms>:<32 hex>), same key shape, for a ratio.
  const article = [];
  for (let round = 0; round < ROUNDS; round++) {
    const key = `rl:art${round}:{ip:10.0.0.100}`;
    for (let i = 0; i < 100; i++) {
      await client.fcall(FUNCTION, 1, key, Date.now(), `${Date.now()}:${randomBytes(16).toString('hex')}`, 1000, 3_600_000, 100);
    }
    article.push(await client.memory('USAGE', key, 'SAMPLES', 0));
  }
  limiter.close?.();
  if (fallbacks > 0) throw new Error(`memory: ${fallbacks} consume() calls were decided without Redis; the keys are not full`);
  results.sections.memory = { measured, article };
  const targets = {};
  for (const limit of LIMITS) {
    const s = spread(measured[limit].bytes);
    const gated = limit === 100;
    if (gated) targets.memory = s;
    row('4 memory', `bytes per key at limit ${limit} (${measured[limit].encoding})`, {
      spread: s,
      unit: 'B',
      digits: 0,
      absolute: `${(s.median / limit).toFixed(1)} B per entry`,
      ...(gated ? { target: '≤ 2700 B', pass: s.median <= 2700 } : {}),
    });
  }
  row('4 memory', 'limit 100: our members / "<ms>:<32 hex>" members', {
    spread: spread(ratios(measured[100].bytes, article)),
    absolute: `${spread(measured[100].bytes).median} B vs ${spread(article).median} B`,
  });
  return targets;
}

// ---------------------------------------------------------------------------------------------------
// 5. Hot-key attack: one key far past its limit; Redis calls per rejected request.

async function sectionHotKey(port, client, stats) {
  log('5/6 hot-key attack');
  const targets = {};
  results.sections.hotKey = { attack: ATTACK, blockCacheDeclared: HAS_BLOCK_CACHE, variants: {} };
  for (const variant of HOT_KEY_VARIANTS) {
    let limiter;
    try {
      limiter = new SlidingWindowLimiter({ client, keyPrefix: 's5:', ...variant.options });
      await limiter.init();
    } catch (error) {
      row('5 hot key', `${variant.label}: not measured`, { note: error.message.split('\n')[0] });
      continue;
    }
    const perRound = { admitted: [], degraded: [], callsPerRejected: [], roundTripsPerRejected: [], perSecond: [], seconds: [] };
    for (let round = 0; round < ROUNDS; round++) {
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
    results.sections.hotKey.variants[variant.label] = perRound;
    // A decision made without Redis under 'allow' is an admission too.
    const admittedOk = perRound.admitted.every((n, i) => n === ATTACK.limit && perRound.degraded[i] === 0);
    const calls = spread(perRound.callsPerRejected);
    targets[variant.label] = { calls, admittedOk };
    if (!admittedOk) log(`  FAIL: ${variant.label} admitted ${perRound.admitted.join(', ')}, decided without Redis ${perRound.degraded.join(', ')} (limit ${ATTACK.limit})`);
    row('5 hot key', `${variant.label}: admitted of ${ATTACK.requests} (limit ${ATTACK.limit}/${ATTACK.windowMs / 1000} s, ${ATTACK.inFlight} in flight)`, {
      spread: spread(perRound.admitted),
      unit: '',
      digits: 0,
      absolute: `decided without Redis: ${perRound.degraded.join(', ')}`,
      target: `= ${ATTACK.limit}`,
      pass: admittedOk,
    });
    row('5 hot key', `${variant.label}: FCALL/EVALSHA per rejected request`, {
      spread: calls,
      unit: '',
      absolute: `all round trips/rejected ${spread(perRound.roundTripsPerRejected).median.toFixed(3)}; ${compact(spread(perRound.perSecond).median)} req/s`,
      // The target is the shipped configuration's; "off" is the baseline it is compared with.
      ...(variant.gated ? { target: '≤ 0.05', pass: calls.median <= 0.05 && admittedOk } : {}),
    });
  }
  if (!HAS_BLOCK_CACHE) row('5 hot key', 'blockCache on', { note: 'not measured: SlidingWindowLimiterOptions has no blockCache yet (see HOT_KEY_VARIANTS)' });
  return targets;
}

// ---------------------------------------------------------------------------------------------------

function printTable(info) {
  const header = { section: 'section', what: 'measurement', value: 'median', range: 'min–max', absolute: 'absolute (medians)', target: 'target', result: '' };
  const all = [header, ...rows];
  const width = (name) => Math.max(...all.map((r) => String(r[name]).length));
  const columns = ['section', 'what', 'value', 'range', 'target', 'result', 'absolute'];
  const widths = Object.fromEntries(columns.map((name) => [name, width(name)]));
  const line = (r) => columns.map((name) => String(r[name]).padEnd(widths[name])).join(' | ').trimEnd();
  const out = [];
  out.push(`nestjs-sliding-limit benchmark — ${info.date}, ${info.machine.nproc} × ${info.machine.cpu}, Node ${info.machine.node}, Redis ${info.machine.redis}, ${ROUNDS} rounds, total ${info.totalSeconds.toFixed(0)} s, load average ${info.machine.loadAverageAtStart[0]} at start / ${info.machine.loadAverageAtEnd[0]} at end`);
  out.push(
    `consume() = SlidingWindowLimiter defaults (${HAS_BLOCK_CACHE ? 'blockCache on, ' : ''}batch on); ratios ours / theirs; AP = ioredis enableAutoPipelining. ` +
      `HTTP: our guard = RateLimitModule.forRoot({ redis: url }) as in the quick start; ${HTTP.connections} connections (1 in the "1 connection" rows), every limit keyed by an x-client-id header that differs per connection (${HTTP.connections} keys), ` +
      `limit ${HTTP.limit} per ${HTTP.windowMs} ms (nothing rejected). Guard: the same route's guard called alone, without HTTP, ${GUARD.inFlight} in flight.`,
  );
  out.push(line(header));
  out.push(columns.map((name) => '-'.repeat(widths[name])).join('-|-'));
  let last;
  for (const r of rows) {
    out.push(line({ ...r, section: r.section === last ? '' : r.section }));
    last = r.section;
  }
  return out.join('\n');
}

async function main() {
  const startedAt = performance.now();
  const { port, child: redis } = await startRedis();
  log(`redis-server on 127.0.0.1:${port}`);
  const connect = (extra = {}) => new Redis({ host: '127.0.0.1', port, ...extra });
  const plain = connect();
  const autoPipelined = connect({ enableAutoPipelining: true });
  const stats = connect();
  await Promise.all([plain.ping(), autoPipelined.ping(), stats.ping()]);
  // Load the shipped libraries once (the limiter loads what is missing).
  const loader = new SlidingWindowLimiter({ client: plain });
  await loader.init();
  loader.close?.();
  const redisVersion = (await stats.info('server')).match(/redis_version:(\S+)/)[1];

  const targets = {};
  const seconds = {};
  const timed = async (name, run) => {
    if (!ONLY.includes(name.split('+')[0])) return undefined;
    const began = performance.now();
    const value = await run();
    seconds[name] = Number(((performance.now() - began) / 1000).toFixed(1));
    log(`  (${name}: ${seconds[name]} s)`);
    return value;
  };
  try {
    await timed('ceiling', () => sectionCeiling(port, plain));
    targets.consume = (await timed('consume', () => sectionConsume(plain, autoPipelined)))?.consume;
    Object.assign(targets, await timed('memory', () => sectionMemory(plain)));
    targets.hotKey = await timed('hotKey', () => sectionHotKey(port, plain, stats));
    targets.http = await timed('http+stacked', () => sectionHttp(port, redis.pid, stats));
    await timed('guard', () => sectionGuard(port));
  } finally {
    plain.disconnect();
    autoPipelined.disconnect();
    stats.disconnect();
    await stopAll();
  }

  const order = ['1 ceiling', '2 consume', '3 http', '3 guard', '4 memory', '5 hot key', '6 stacked'];
  rows.sort((a, b) => order.indexOf(a.section) - order.indexOf(b.section));
  const date = new Date().toISOString().slice(0, 10);
  const info = { date, machine: machine(redisVersion), rounds: ROUNDS, quick: QUICK, sectionsRun: ONLY, totalSeconds: (performance.now() - startedAt) / 1000, sectionSeconds: seconds };
  const table = printTable(info);
  console.log(table);
  const failed = rows.filter((r) => r.result === 'FAIL').length;
  const passed = rows.filter((r) => r.result === 'PASS').length;
  console.log(`\ntargets: ${passed} PASS, ${failed} FAIL`);

  const dir = join(here, 'results');
  mkdirSync(dir, { recursive: true });
  // A short or partial run never overwrites the full run of the day.
  const partial = ONLY.length < SECTIONS.length ? `only-${ONLY.join('-')}-` : '';
  const file = join(dir, `${QUICK ? 'quick-' : ''}${partial}${date}.json`);
  writeFileSync(`${file}.tmp`, `${JSON.stringify({ ...info, table: rows, targets, ...results }, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
  console.log(`results: ${file}`);
}

main().catch(async (error) => {
  console.error(error);
  await stopAll();
  process.exit(1);
});
