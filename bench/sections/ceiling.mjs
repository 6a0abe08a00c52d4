// 1. The ceiling: redis-benchmark running the bare FCALL of the other sections (the article's
// sliding_allow_v1) directly, next to a bare ioredis loop of it. What Redis itself does with the
// function, pipelined and not, and how close a plain ioredis client gets to it: the upper bound every
// other row is read against. Also where Redis spends such a decision (the function's total time and
// the commands it runs inside, from INFO commandstats).
import { KEYSPACE } from '../lib/config.mjs';
import { BARE_FUNCTION, bareAdmitted, bareFcall, memberSource } from '../lib/decisions.mjs';
import { redisCpuSeconds, withCpu } from '../lib/cpu.mjs';
import { compact, drive, interleaved, median, ratios, spread } from '../lib/measure.mjs';
import { runCommand } from '../lib/processes.mjs';
import { commandStats } from '../lib/redis-stats.mjs';
import { log } from '../lib/report.mjs';

export async function ceiling({ settings: { rounds, quick }, report, redis: { port, plain: client, stats } }) {
  log('1/6 ceiling: redis-benchmark FCALL, -P 16 and -c 50, next to a bare ioredis fcall loop');
  const benchmark = async (pipeline) => {
    // A fixed numeric now_ms per run: redis-benchmark cannot send a clock. The arguments are the
    // bare loop's: key, now_ms, window_ms, limit, a short member.
    const requests = quick ? 30_000 : pipeline ? 120_000 : 60_000;
    const args = [
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-c',
      '50',
      '-n',
      String(requests),
      '-r',
      String(KEYSPACE),
      '--csv',
    ];
    if (pipeline) args.push('-P', '16');
    args.push('FCALL', BARE_FUNCTION, '1', 's1:rb:__rand_int__', String(Date.now()), '60000', '1000', 'm__rand_int__');
    // Redis' CPU per request beside the rate (redis-benchmark's own CPU is not this package's).
    const redisBefore = await redisCpuSeconds(stats);
    const csv = (await runCommand('redis-benchmark', args, 120_000)).trim().split('\n');
    const redisMicros = (((await redisCpuSeconds(stats)) - redisBefore) * 1e6) / requests;
    cpu[pipeline ? 'pipelined' : 'unpipelined'].push({ redisMicros });
    return Number(JSON.parse(`[${csv[csv.length - 1]}]`)[1]);
  };
  const cpu = { pipelined: [], unpipelined: [], bare64: [] };
  const next = memberSource();
  const rule = { windowMs: 60_000, limit: 1000 };
  const bare = (i) => bareFcall(client, `s1:bare:${i % KEYSPACE}`, Date.now(), rule, next()).then(bareAdmitted);
  const variants = {
    pipelined: () => benchmark(true),
    unpipelined: () => benchmark(false),
    bare64: async () => {
      const m = await withCpu(stats, () =>
        drive({ inFlight: 64, warmupMs: 200, durationMs: quick ? 500 : 1800, maxOps: 1_000_000, call: bare }),
      );
      cpu.bare64.push({
        clientMicros: (m.clientSeconds * 1e6) / m.result.calls,
        redisMicros: (m.redisSeconds * 1e6) / m.result.calls,
      });
      return m.result.perSecond;
    },
  };
  const samples = { pipelined: [], unpipelined: [], bare64: [] };
  const names = Object.keys(variants);
  await client.config('RESETSTAT');
  for (let round = 0; round < rounds; round++) {
    for (const name of interleaved(names, 1, round)) samples[name][round] = await variants[name]();
  }
  const med = Object.fromEntries(names.map((name) => [name, spread(samples[name]).median]));
  // Where Redis spends a decision: the function's total time and the commands it runs inside.
  const usec = await commandStats(client);
  const fcall = usec.fcall;
  const inner = Object.entries(usec).filter(
    ([name]) => name !== 'fcall' && name !== 'info' && !name.startsWith('config'),
  );
  const innerUsec = inner.reduce((sum, [, v]) => sum + v.usec, 0);
  const perDecision = Object.fromEntries(inner.map(([name, v]) => [name, Number((v.usec / fcall.calls).toFixed(2))]));
  const cpuMed = (name, part) => median(cpu[name].map((x) => x[part]));
  report.record('ceiling', {
    samples,
    cpu,
    serverMicrosPerDecision: Number((fcall.usec / fcall.calls).toFixed(2)),
    innerMicrosPerDecision: perDecision,
  });
  report.row('1 ceiling', 'redis-benchmark -P 16 / -c 50 (pipelined / not)', {
    spread: spread(ratios(samples.pipelined, samples.unpipelined)),
    absolute: `${compact(med.pipelined)}/s vs ${compact(med.unpipelined)}/s; Redis CPU ${cpuMed('pipelined', 'redisMicros').toFixed(1)} vs ${cpuMed('unpipelined', 'redisMicros').toFixed(1)} µs per call`,
  });
  report.row('1 ceiling', 'Redis time in the commands a decision runs / its whole FCALL', {
    value: innerUsec / fcall.usec,
    absolute: `${(fcall.usec / fcall.calls).toFixed(2)} µs per FCALL; ${Object.entries(perDecision)
      .map(([name, v]) => `${name} ${v}`)
      .join(', ')}`,
  });
  report.row('1 ceiling', 'bare ioredis fcall, 64 in flight / redis-benchmark -P 16', {
    spread: spread(ratios(samples.bare64, samples.pipelined)),
    absolute:
      `${compact(med.bare64)}/s vs ${compact(med.pipelined)}/s; bare fcall CPU per decision ` +
      `client ${cpuMed('bare64', 'clientMicros').toFixed(1)} + Redis ${cpuMed('bare64', 'redisMicros').toFixed(1)} µs`,
  });
  report.row('1 ceiling', 'bare ioredis fcall, 64 in flight / redis-benchmark -c 50', {
    spread: spread(ratios(samples.bare64, samples.unpipelined)),
    absolute: `${compact(med.bare64)}/s vs ${compact(med.unpipelined)}/s`,
  });
}
