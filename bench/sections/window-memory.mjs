// 7. Memory per key of rate_limit_v2's two windows: the log (precision 0, v1's sorted set: one entry
//    per request) and the bucketed window (one hash field per sub-window, whatever the limit). Each
//    key is filled as a full window of traffic would fill it: `limit` requests of cost 1, FCALLs with
//    synthetic times spread evenly over one hour (nothing waits), then MEMORY USAGE … SAMPLES 0 and
//    OBJECT ENCODING. The target: 10,000 per hour at 1-minute precision in at most 2 KB per
//    key, where the log takes about 1 MB. A bucketed key past 10,000 requests (and the one at
//    1,000 sub-windows) is filled with one FCALL per sub-window carrying its requests' cost: the
//    same fields and counts; a check row compares both fills at 10,000. Every key is deleted once
//    measured.
import { ratios, spread } from '../lib/measure.mjs';
import { log } from '../lib/report.mjs';
import { describeWindow, fillFullWindow, unlinkAll } from '../lib/windows.mjs';

const HOUR = 3_600_000;
const MINUTE = 60_000;
const LIMITS = [100, 1_000, 10_000, 100_000];
/** The gated key: 10,000 per hour at 1-minute precision, ≤ 2 KB. */
const TARGET = { limit: 10_000, maxBytes: 2048 };
/** Redis' default hash-max-listpack-value: a hash with a longer value is a hashtable. */
const LISTPACK_VALUE = 64;

// The keys, in the order of the table: the log and the bucketed window at each limit, the bucketed
// window at its finest precision for one hour (1,000 sub-windows, the most a limit may have), and
// the gated key again, filled per sub-window (the check of that fill).
const KEYS = [
  ...LIMITS.map((limit) => ({ id: `log${limit}`, spec: { windowMs: HOUR, limit, precisionMs: 0 } })),
  ...LIMITS.map((limit) => ({
    id: `bucketed${limit}`,
    spec: { windowMs: HOUR, limit, precisionMs: MINUTE },
    merged: limit > 10_000,
  })),
  { id: 'finest', spec: { windowMs: HOUR, limit: 10_000, precisionMs: 3_600 }, merged: true },
  { id: 'mergedCheck', spec: { windowMs: HOUR, limit: TARGET.limit, precisionMs: MINUTE }, merged: true },
];

export async function windowMemory({ settings: { rounds, windows }, report, redis: { plain: client } }) {
  log('7 window memory: bytes per key, log and bucketed (rate_limit_v2)');
  const fromMs = Math.floor(Date.now() / HOUR) * HOUR;
  const measured = Object.fromEntries(
    KEYS.map(({ id, spec, merged = false }) => [id, { ...spec, what: describeWindow(spec), merged, bytes: [] }]),
  );
  const shortIds = { bytes: [], encoding: undefined };
  for (let round = 0; round < rounds; round++) {
    for (const [i, { id }] of KEYS.entries()) {
      const m = measured[id];
      // The 100,000-entry log (several MB, most of the section's time) only in the first rounds (none
      // with BENCH_QUICK).
      if (id === 'log100000' && round >= windows.largestMemoryRounds) continue;
      const key = `rl:w7:${round}:{ip:10.1.${i}.${m.limit % 251}}`;
      m.calls = await fillFullWindow(client, key, m, fromMs, { merged: m.merged });
      m.bytes.push(await client.memory('USAGE', key, 'SAMPLES', 0));
      m.encoding = await client.object('ENCODING', key);
      m.fields = m.precisionMs ? await client.hlen(key) : await client.zcard(key);
      // A bucketed key's fields other than its sub-windows (the request ids, …), by name.
      if (m.precisionMs) m.otherFields = (await client.hkeys(key)).filter((name) => !/^\d+$/.test(name));
      if (m.precisionMs) m.idsBytes = Buffer.byteLength((await client.hget(key, 'ids')) ?? '');
      if (id === `bucketed${TARGET.limit}`) {
        const { copy, ids, of } = await withShortIds(client, key);
        shortIds.bytes.push(await client.memory('USAGE', copy, 'SAMPLES', 0));
        shortIds.encoding = await client.object('ENCODING', copy);
        shortIds.ids = ids;
        shortIds.of = of;
        await unlinkAll(client, [copy]);
      }
      await unlinkAll(client, [key]);
    }
  }
  report.record('windowMemory', { fromMs, measured, shortIds });

  const row = (what, values, extra) =>
    report.row('7 window memory', what, { spread: spread(values), unit: 'B', digits: 0, ...extra });
  for (const { id } of KEYS.filter((k) => k.id !== 'mergedCheck' && measured[k.id].bytes.length > 0)) {
    const m = measured[id];
    const s = spread(m.bytes);
    const gated = id === `bucketed${TARGET.limit}`;
    if (gated) report.target('windowMemory', s);
    const filled = `${m.calls.toLocaleString('en-US')} FCALLs`;
    const fields = () =>
      `${m.fields} fields: ${m.fields - m.otherFields.length} sub-windows + ${m.otherFields.join(', ')}; ` +
      `${(s.median / m.fields).toFixed(1)} B per field`;
    row(`${m.what}: bytes per key (${m.encoding})`, m.bytes, {
      absolute: m.precisionMs
        ? `${fields()}; ${filled}` + (gated ? `; ids ${m.idsBytes} B` : '')
        : `${(s.median / m.limit).toFixed(1)} B per entry; ${filled}`,
      ...(gated ? { target: `≤ ${TARGET.maxBytes} B`, pass: s.median <= TARGET.maxBytes } : {}),
    });
  }
  for (const limit of LIMITS) {
    const logKey = measured[`log${limit}`];
    const bucketed = measured[`bucketed${limit}`];
    const pairs = Math.min(logKey.bytes.length, bucketed.bytes.length);
    if (pairs === 0) continue;
    report.row('7 window memory', `${limit.toLocaleString('en-US')} / 1 h: bucketed 1 min / log, bytes per key`, {
      spread: spread(ratios(bucketed.bytes.slice(0, pairs), logKey.bytes.slice(0, pairs))),
      digits: 4,
      absolute: `${spread(bucketed.bytes).median} B vs ${spread(logKey.bytes).median} B`,
    });
  }
  const gated = measured[`bucketed${TARGET.limit}`];
  report.row('7 window memory', `${gated.what}: filled per sub-window / per request (check)`, {
    spread: spread(ratios(measured.mergedCheck.bytes, gated.bytes)),
    absolute:
      `${spread(measured.mergedCheck.bytes).median} B vs ${spread(gated.bytes).median} B ` +
      `(ids ${measured.mergedCheck.idsBytes} vs ${gated.idsBytes} B: the members' counters are shorter)`,
  });
  row(`${gated.what}, its fields copied with ids ≤ ${LISTPACK_VALUE} B (${shortIds.encoding})`, shortIds.bytes, {
    absolute: `not the function's key: HSET of the same counts, ids cut to ${shortIds.ids} of ${shortIds.of}`,
  });
}

/**
 * A copy of the bucketed key `key` (HSET of its fields, a new key) whose ids field keeps only the
 * newest ids that fit in Redis' listpack value size: what the key would take as a listpack.
 */
async function withShortIds(client, key) {
  const fields = await client.hgetall(key);
  const kept = [];
  for (const id of fields.ids.split(' ')) {
    if (Buffer.byteLength([...kept, id].join(' ')) > LISTPACK_VALUE) break;
    kept.push(id);
  }
  const copy = `${key}:copy`;
  await client.hset(copy, { ...fields, ids: kept.join(' ') });
  return { copy, ids: kept.length, of: fields.ids.split(' ').length };
}
