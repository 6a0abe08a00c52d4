// What the sections on rate_limit_v2's two windows share (window-memory, window-time, window-cost):
// the function's arguments, keys filled with synthetic traffic (times spread over the window, sent as
// FCALLs, never waited for), a steady load of decisions on a synthetic clock, and Redis' time per
// decision from INFO commandstats and from its process' CPU time. bench/run.mjs loads the function's
// library before any section runs.
import { memberSource } from './decisions.mjs';
import { drive, interleaved } from './measure.mjs';
import { cpuSecondsOf } from './processes.mjs';
import { commandStats } from './redis-stats.mjs';
import { log } from './report.mjs';

/** The function of both windows: a cost per request and, per limit, the log (precision 0) or the bucketed window. */
export const WINDOW_FUNCTION = 'sliding_allow_v2';
/** max_skew_ms of every synthetic call: the synthetic clock never goes back by more than a window. */
const MAX_SKEW_MS = 3_600_000;
/** FCALLs per pipeline when filling keys: bounded, so a fill never holds a huge reply in memory. */
const PIPELINE = 1000;

/** `{ windowMs, limit, precisionMs }` in words: "log, 100 / 1 h" or "bucketed 1 min, 100 / 1 h". */
export function describeWindow({ windowMs, limit, precisionMs }) {
  const span = (ms) =>
    ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;
  const per = `${limit.toLocaleString('en-US')} / ${span(windowMs)}`;
  return precisionMs ? `bucketed ${span(precisionMs)}, ${per}` : `log, ${per}`;
}

/**
 * One `FCALL sliding_allow_v2 1 <key> <now_ms> <member> <max_skew_ms> <cost> <window_ms> <limit>
 * <precision_ms> <flags>` on one key, as `call()` takes it. Flags 0: an enforced limit without its
 * override key. The limiter passes the override key by default (one EXISTS more per decision, the
 * same for both windows); these sections compare the windows' own storage and time, so they leave
 * it out (bench/callgrind-versions.mjs counts both ways).
 */
function fcallArgs(key, nowMs, member, cost, { windowMs, limit, precisionMs }) {
  return ['FCALL', WINDOW_FUNCTION, 1, key, nowMs, member, MAX_SKEW_MS, cost, windowMs, limit, precisionMs, 0];
}

/**
 * Sends `calls` (`[key, nowMs, cost]`, in order) as FCALLs on `spec`'s window, pipelined in bounded
 * chunks; throws on an error reply or a rejection (a fill must be admitted in full).
 */
export async function sendAll(client, spec, calls, next = memberSource()) {
  for (let at = 0; at < calls.length; at += PIPELINE) {
    const pipeline = client.pipeline();
    for (const [key, nowMs, cost] of calls.slice(at, at + PIPELINE)) {
      pipeline.call(...fcallArgs(key, nowMs, next(), cost, spec));
    }
    for (const [error, reply] of await pipeline.exec()) {
      if (error) throw error;
      if (reply[0] !== 1) throw new Error(`fill of ${describeWindow(spec)} rejected: ${JSON.stringify(reply)}`);
    }
  }
}

/**
 * For a bucketed window: `calls` (`[key, nowMs, cost]`, in time order per key) merged into one call
 * per key and sub-window, at the time of its last request with the cost of all of them. A bucketed
 * key keeps only a count per sub-window and the ids of its last 8 requests, so the merged calls
 * leave the same key (same fields, same counts, ids of the same length) in far fewer calls.
 */
export function mergedBySubWindow(calls, precisionMs) {
  const merged = [];
  for (const [key, nowMs, cost] of calls) {
    const last = merged.at(-1);
    if (last && last[0] === key && Math.floor(last[1] / precisionMs) === Math.floor(nowMs / precisionMs)) {
      last[1] = nowMs;
      last[2] += cost;
    } else merged.push([key, nowMs, cost]);
  }
  return merged;
}

/**
 * Fills `key` as a full window of traffic would: `limit` requests of cost 1, their times spread
 * evenly over one window starting at `fromMs` (a multiple of the window, so that no sub-window is
 * cut). With `merged`, a bucketed key gets one call per sub-window instead (`mergedBySubWindow`).
 * Returns the number of FCALLs sent.
 */
export async function fillFullWindow(client, key, spec, fromMs, { merged = false } = {}) {
  const { windowMs, limit, precisionMs } = spec;
  let calls = [];
  for (let k = 0; k < limit; k++) calls.push([key, fromMs + Math.floor((k * windowMs) / limit), 1]);
  if (merged && precisionMs) calls = mergedBySubWindow(calls, precisionMs);
  await sendAll(client, spec, calls);
  return calls.length;
}

/**
 * A steady load on `keys` keys of one window: every key receives requests of `cost` at
 * `occupancy` of its limit (so nearly all are admitted), on a synthetic clock that starts at
 * `startMs` and advances by the key's interval per request, whatever the real time. `prefill()`
 * writes the window before `startMs` (the same schedule, earlier); `call(i)` decides the next
 * request and resolves to whether it was admitted. Requests go to the keys in turn, all on one
 * connection, so Redis runs them in the order they were issued: each key sees its own in time order.
 */
export function steadyLoad(client, { prefix, keys, spec, cost = 1, occupancy = 0.9, startMs }) {
  const { windowMs, limit, precisionMs } = spec;
  const interval = (windowMs * cost) / (occupancy * limit);
  const perWindow = Math.floor((occupancy * limit) / cost);
  const keyOf = (k) => `${prefix}{k${k}}`;
  const timeOf = (m) => startMs + Math.floor(m * interval);
  const next = memberSource();
  let sequence = 0;
  return {
    keyNames: () => Array.from({ length: keys }, (_, k) => keyOf(k)),
    /** The window before `startMs`, as the same requests would have left it. */
    async prefill() {
      let calls = [];
      for (let k = 0; k < keys; k++) {
        for (let m = -perWindow; m < 0; m++) calls.push([keyOf(k), timeOf(m), cost]);
      }
      // A bucketed key: one call per sub-window leaves the same key in far fewer calls.
      if (precisionMs) calls = mergedBySubWindow(calls, precisionMs);
      await sendAll(client, spec, calls, next);
      return calls.length;
    },
    call: () => {
      const s = sequence++;
      const nowMs = timeOf(Math.floor(s / keys));
      return client.call(...fcallArgs(keyOf(s % keys), nowMs, next(), cost, spec)).then((reply) => reply[0] === 1);
    },
  };
}

/**
 * Redis' time over `run()`: the FCALLs' time from INFO commandstats (what `usec_per_call` reports:
 * the function's own execution, its commands included), the time of the commands run inside them
 * (`inner`: HGETALL, ZADD, …) and the server process' CPU time (all of that plus reading requests
 * and writing replies). Returns `{ calls, usec, inner: { command: usec }, cpuMicros }`.
 */
export async function redisTimeOf(stats, pid, run) {
  const before = await commandStats(stats);
  const cpuBefore = cpuSecondsOf(pid);
  await run();
  const cpuAfter = cpuSecondsOf(pid);
  const after = await commandStats(stats);
  const inner = {};
  for (const [command, { usec }] of Object.entries(after)) {
    if (command === 'fcall' || command === 'info') continue;
    const diff = usec - (before[command]?.usec ?? 0);
    if (diff > 0) inner[command] = diff;
  }
  return {
    calls: after.fcall.calls - (before.fcall?.calls ?? 0),
    usec: after.fcall.usec - (before.fcall?.usec ?? 0),
    inner,
    cpuMicros: (cpuAfter - cpuBefore) * 1e6,
  };
}

/**
 * Redis' time per decision of each steady load in `loads` (`{ id: steadyLoad(…) }`, prefilled), the
 * loads interleaved in `slices` slices of `sliceMs` per round (order rotated per round), 64 calls
 * in flight. Returns `{ id: [{ usecPerCall, cpuMicrosPerCall, innerUsecPerCall, calls, admitted,
 * rejected }, …] }`, one entry per round: every ratio pairs the rounds' values.
 */
export async function redisTimePerDecision({ stats, pid, loads, rounds, slices, sliceMs, maxOps }) {
  const ids = Object.keys(loads);
  const slice = (id, durationMs) => drive({ inFlight: 64, warmupMs: 0, durationMs, maxOps, call: loads[id].call });
  // Warm-up, not measured: the JIT of the loop and the first pass over every key.
  for (const id of ids) await slice(id, Math.min(sliceMs, 100));
  const perRound = Object.fromEntries(ids.map((id) => [id, []]));
  for (let round = 0; round < rounds; round++) {
    const sums = Object.fromEntries(
      ids.map((id) => [id, { calls: 0, usec: 0, cpuMicros: 0, inner: {}, admitted: 0, rejected: 0, errors: 0 }]),
    );
    for (const id of interleaved(ids, slices, round)) {
      let outcome;
      const time = await redisTimeOf(stats, pid, async () => {
        outcome = await slice(id, sliceMs);
      });
      const sum = sums[id];
      sum.calls += time.calls;
      sum.usec += time.usec;
      sum.cpuMicros += time.cpuMicros;
      for (const [command, usec] of Object.entries(time.inner)) sum.inner[command] = (sum.inner[command] ?? 0) + usec;
      sum.admitted += outcome.admitted;
      sum.rejected += outcome.rejected;
      sum.errors += outcome.errors;
      if (outcome.errors > 0) throw new Error(`${id}: ${outcome.errors} calls failed: ${outcome.firstError?.message}`);
    }
    for (const id of ids) {
      const { calls, usec, cpuMicros, inner, admitted, rejected } = sums[id];
      const innerPerCall = Object.fromEntries(
        Object.entries(inner).map(([command, micros]) => [command, Number((micros / calls).toFixed(2))]),
      );
      perRound[id].push({
        usecPerCall: usec / calls,
        cpuMicrosPerCall: cpuMicros / calls,
        innerUsecPerCall: innerPerCall,
        calls,
        admitted,
        rejected,
      });
    }
  }
  return perRound;
}

/** Deletes `keys` (UNLINK, in bounded chunks): big log keys are not left in the server for later sections. */
export async function unlinkAll(client, keys) {
  for (let at = 0; at < keys.length; at += PIPELINE) await client.unlink(...keys.slice(at, at + PIPELINE));
}

/**
 * Fills each load's keys with a full window, measures Redis' time per decision round by round
 * (redisTimePerDecision), deletes the keys, and warns of any load that rejected: a steady load at
 * 90% of its limit should not. Returns the prefill call counts and the per-round measurements.
 */
export async function measureLoads(client, { stats, pid, loads, rounds, timing }) {
  const prefillCalls = {};
  for (const [id, load] of Object.entries(loads)) prefillCalls[id] = await load.prefill();
  const perRound = await redisTimePerDecision({ stats, pid, loads, rounds, ...timing });
  for (const load of Object.values(loads)) await unlinkAll(client, load.keyNames());
  for (const [id, measured] of Object.entries(perRound)) {
    const rejected = measured.reduce((sum, r) => sum + r.rejected, 0);
    if (rejected > 0) log(`  warning: ${id} rejected ${rejected} decisions at 90% of its limit`);
  }
  return { prefillCalls, perRound };
}
