// 8. Redis time per decision of rate_limit_v2's two windows, on keys in their steady state: every key
//    holds a full window of traffic (prefilled with FCALLs at synthetic times) and keeps receiving
//    requests at 90% of its limit on a synthetic clock, so each decision drops what left the window
//    and records one request, as under real traffic. The log (precision 0) and the bucketed window
//    (1 minute) at 100 per hour, and the bucketed window at 10,000 per hour (its time depends on the
//    sub-windows, not the limit; the log's on the entries), interleaved in slices within each round.
//    Time per decision is the FCALL's usec_per_call from INFO commandstats (Redis' wall clock around
//    the function); Redis' process CPU per call is given beside it. The issue's target: the bucketed
//    window at most 1.2× the log's time at limit 100.
import { ratios, spread } from '../lib/measure.mjs';
import { log } from '../lib/report.mjs';
import { describeWindow, measureLoads, steadyLoad } from '../lib/windows.mjs';

const HOUR = 3_600_000;
const SPECS = {
  log100: { windowMs: HOUR, limit: 100, precisionMs: 0 },
  bucketed100: { windowMs: HOUR, limit: 100, precisionMs: 60_000 },
  bucketed10k: { windowMs: HOUR, limit: 10_000, precisionMs: 60_000 },
};
const TARGET = 1.2;

export async function windowTime({ settings: { rounds, windows }, report, redis: { pid, plain: client, stats } }) {
  log(`8 window time: Redis time per decision, log and bucketed (${windows.timeKeys} keys each)`);
  const startMs = Math.floor(Date.now() / HOUR) * HOUR;
  const loads = Object.fromEntries(
    Object.entries(SPECS).map(([id, spec]) => [
      id,
      steadyLoad(client, { prefix: `w8:${id}:`, keys: windows.timeKeys, spec, startMs }),
    ]),
  );
  const { prefillCalls, perRound } = await measureLoads(client, { stats, pid, loads, rounds, timing: windows.timing });
  report.record('windowTime', { specs: SPECS, keys: windows.timeKeys, timing: windows.timing, prefillCalls, perRound });

  const usec = (id) => perRound[id].map((r) => r.usecPerCall);
  const cpu = (id) => perRound[id].map((r) => r.cpuMicrosPerCall);
  const med = (values) => spread(values).median.toFixed(2);
  const compare = (id, base, gated) => {
    const s = spread(ratios(usec(id), usec(base)));
    if (gated) report.target('windowTime', s);
    report.row(
      '8 window time',
      `Redis time per decision: ${describeWindow(SPECS[id])} / ${describeWindow(SPECS[base])}`,
      {
        spread: s,
        absolute:
          `${med(usec(id))} µs vs ${med(usec(base))} µs per FCALL (commandstats); ` +
          `Redis CPU ${med(cpu(id))} vs ${med(cpu(base))} µs per call`,
        ...(gated ? { target: `≤ ${TARGET}×`, pass: s.median <= TARGET } : {}),
      },
    );
  };
  compare('bucketed100', 'log100', true);
  compare('bucketed10k', 'log100', false);
  compare('bucketed10k', 'bucketed100', false);
  report.row('8 window time', `Redis CPU per call: ${describeWindow(SPECS.bucketed100)} / log`, {
    spread: spread(ratios(cpu('bucketed100'), cpu('log100'))),
    absolute: `${med(cpu('bucketed100'))} µs vs ${med(cpu('log100'))} µs (process CPU: the call, its I/O and parsing)`,
  });
  // Where a decision's time goes: the commands it runs, against the whole FCALL (the rest is Lua,
  // the conversion of the commands' replies into Lua values included).
  for (const id of ['log100', 'bucketed100']) {
    const inner = perRound[id].map((r) => Object.values(r.innerUsecPerCall).reduce((sum, v) => sum + v, 0));
    const commands = [...new Set(perRound[id].flatMap((r) => Object.keys(r.innerUsecPerCall)))].sort();
    const perCommand = commands.map((c) => `${c} ${med(perRound[id].map((r) => r.innerUsecPerCall[c] ?? 0))}`);
    report.row('8 window time', `${describeWindow(SPECS[id])}: Redis time in the commands it runs / its whole FCALL`, {
      spread: spread(ratios(inner, usec(id))),
      absolute: `${med(inner)} of ${med(usec(id))} µs: ${perCommand.join(', ')}`,
    });
  }
}
