// 9. Cost-weighted decisions: Redis time per decision of requests of cost 1 and of cost 10, on both of
//    rate_limit_v2's windows at 1,000 per hour. The log writes a request of cost c as c entries (and
//    drops as many when they leave the window); the bucketed window adds c to one counter. Keys in
//    their steady state as in section 8 (a full window prefilled with FCALLs at synthetic times, then
//    requests at 90% of the limit, counted in cost: a cost-10 key gets a tenth of the requests), the
//    four loads interleaved in slices within each round; the time is the FCALL's usec_per_call from
//    INFO commandstats, Redis' process CPU per call beside it.
import { ratios, spread } from '../lib/measure.mjs';
import { log } from '../lib/report.mjs';
import { describeWindow, measureLoads, steadyLoad } from '../lib/windows.mjs';

const HOUR = 3_600_000;
const LOG = { windowMs: HOUR, limit: 1_000, precisionMs: 0 };
const BUCKETED = { windowMs: HOUR, limit: 1_000, precisionMs: 60_000 };
const LOADS = {
  logCost1: { spec: LOG, cost: 1 },
  logCost10: { spec: LOG, cost: 10 },
  bucketedCost1: { spec: BUCKETED, cost: 1 },
  bucketedCost10: { spec: BUCKETED, cost: 10 },
};

export async function windowCost({ settings: { rounds, windows }, report, redis: { pid, plain: client, stats } }) {
  log(`9 window cost: Redis time per decision at cost 1 and cost 10 (${windows.costKeys} keys each)`);
  const startMs = Math.floor(Date.now() / HOUR) * HOUR;
  const loads = Object.fromEntries(
    Object.entries(LOADS).map(([id, { spec, cost }]) => [
      id,
      steadyLoad(client, { prefix: `w9:${id}:`, keys: windows.costKeys, spec, cost, startMs }),
    ]),
  );
  const { prefillCalls, perRound } = await measureLoads(client, { stats, pid, loads, rounds, timing: windows.timing });
  report.record('windowCost', { loads: LOADS, keys: windows.costKeys, timing: windows.timing, prefillCalls, perRound });

  const usec = (id) => perRound[id].map((r) => r.usecPerCall);
  const cpu = (id) => perRound[id].map((r) => r.cpuMicrosPerCall);
  const med = (values) => spread(values).median.toFixed(2);
  const compare = (what, id, base) =>
    report.row('9 window cost', what, {
      spread: spread(ratios(usec(id), usec(base))),
      absolute:
        `${med(usec(id))} µs vs ${med(usec(base))} µs per FCALL (commandstats); ` +
        `Redis CPU ${med(cpu(id))} vs ${med(cpu(base))} µs per call`,
    });
  compare(`${describeWindow(LOG)}: cost 10 / cost 1, Redis time per decision`, 'logCost10', 'logCost1');
  compare(`${describeWindow(BUCKETED)}: cost 10 / cost 1, Redis time per decision`, 'bucketedCost10', 'bucketedCost1');
  compare('cost 1: bucketed 1 min / log, Redis time per decision', 'bucketedCost1', 'logCost1');
  compare('cost 10: bucketed 1 min / log, Redis time per decision', 'bucketedCost10', 'logCost10');
}
