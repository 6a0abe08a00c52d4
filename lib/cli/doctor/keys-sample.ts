import type { Redis } from 'ioredis';
import { INSTANCE_REPORT_KEY_PART } from '../../core/instance-report';
import { escapeGlob } from '../../core/override-keys';
import { toText } from '../../redis/reply';
import { listSome, plural } from '../format';
import type { DoctorNode } from './doctor-nodes';
import { type FindingInput, formatBytes } from './findings';
import { integerOf } from './replies';

/** Bytes of a bounded-memory key of a 1-hour window, whatever its limit (docs/performance.md). */
const BOUNDED_KEY_BYTES = 840;
const BIGGEST_KEYS = 5;

interface SampledKey {
  key: string;
  type: string;
  /** PTTL: -1 without a TTL. */
  ttlMs: number;
  /** MEMORY USAGE, null when the server would not say. */
  bytes: number | null;
  /** OBJECT ENCODING: listpack/ziplist (compact), skiplist, hashtable… */
  encoding: string | null;
  /** ZCARD of a sorted set, HLEN of a hash, null otherwise. */
  entries: number | null;
}

/** Samples up to `sample` keys under `prefix` with SCAN (not the reports), with their type, TTL, size and encoding. */
async function sampleKeys(node: Redis, prefix: string, sample: number): Promise<SampledKey[]> {
  const match = `${escapeGlob(prefix)}*`;
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await node.scan(cursor, 'MATCH', match, 'COUNT', Math.min(1000, Math.max(100, sample)));
    cursor = String(next);
    for (const key of found) if (!key.includes(INSTANCE_REPORT_KEY_PART) && keys.length < sample) keys.push(key);
  } while (cursor !== '0' && keys.length < sample);

  const sampled: SampledKey[] = [];
  for (let start = 0; start < keys.length; start += 200) {
    const chunk = keys.slice(start, start + 200);
    const pipeline = node.pipeline();
    for (const key of chunk) {
      pipeline.type(key);
      pipeline.pttl(key);
      pipeline.call('MEMORY', 'USAGE', key);
      pipeline.call('OBJECT', 'ENCODING', key);
    }
    const replies = (await pipeline.exec()) ?? [];
    const value = (i: number) => (replies[i]?.[0] ? null : replies[i]?.[1]);
    chunk.forEach((key, i) => {
      const encoding = value(i * 4 + 3);
      sampled.push({
        key,
        type: toText(value(i * 4)),
        ttlMs: integerOf(value(i * 4 + 1)) ?? -2,
        bytes: integerOf(value(i * 4 + 2)) ?? null,
        encoding: encoding === null || encoding === undefined ? null : toText(encoding),
        entries: null,
      });
    });
  }
  const counted = sampled.filter((k) => k.type === 'zset' || k.type === 'hash');
  if (counted.length > 0) {
    const pipeline = node.pipeline();
    for (const k of counted) {
      if (k.type === 'zset') pipeline.zcard(k.key);
      else pipeline.hlen(k.key);
    }
    const replies = (await pipeline.exec()) ?? [];
    counted.forEach((k, i) => (k.entries = replies[i]?.[0] ? null : (integerOf(replies[i]?.[1]) ?? null)));
  }
  // A key that expired between SCAN and TYPE reads as type "none".
  return sampled.filter((k) => k.type !== 'none');
}

/** Keys: a sample of the limiter's keys on every master, judged. */
export async function checkKeys(nodes: readonly DoctorNode[], prefix: string, sample: number): Promise<FindingInput[]> {
  const masters = nodes.filter((node) => node.role === 'master');
  const samples = await Promise.all(masters.map((node) => sampleKeys(node.client, prefix, sample)));
  return masters.flatMap((node, i) => judgeKeys(node.address, prefix, sample, samples[i]));
}

export function judgeKeys(
  address: string,
  prefix: string,
  sample: number,
  keys: readonly SampledKey[],
): FindingInput[] {
  if (keys.length === 0) {
    return [
      {
        severity: 'ok',
        code: 'keys-none',
        node: address,
        summary: `no keys under ${prefix}`,
        meaning: 'nothing to sample here: no traffic yet, or the limiter uses another key prefix',
        action: 'if the limiter uses another keyPrefix, pass it: --key-prefix <prefix>',
      },
    ];
  }
  const findings: FindingInput[] = [];
  const measured = keys.filter((k) => k.bytes !== null);
  const total = measured.reduce((sum, k) => sum + (k.bytes ?? 0), 0);
  const count = (type: string) => keys.filter((k) => k.type === type).length;
  findings.push({
    severity: 'ok',
    code: 'keys-sampled',
    node: address,
    summary:
      `sampled ${plural(keys.length, 'key')} under ${prefix}${keys.length >= sample ? ` (the first ${sample} SCAN found)` : ''} ` +
      `(${formatBytes(total)}, ${measured.length ? Math.round(total / measured.length) : 0} B per key on average): ` +
      `${count('zset')} logs (sorted sets), ${count('hash')} bounded-memory (hashes)`,
    meaning: 'MEMORY USAGE of each key; a log key grows by 26 B (compact) to ~110 B per request in its window',
    action: null,
    details: { sampled: keys.length, totalBytes: total, zsets: count('zset'), hashes: count('hash') },
  });

  const noTtl = keys.filter((k) => k.ttlMs === -1);
  if (noTtl.length > 0) {
    findings.push({
      severity: 'problem',
      code: 'key-without-ttl',
      node: address,
      summary: `${plural(noTtl.length, 'key')} under ${prefix} without a TTL: ${names(noTtl)}`,
      meaning: 'they never expire and hold memory until deleted; the package sets a TTL on every key it writes',
      action: 'find what writes them (another program, a manual write), then DEL them or set a TTL (PEXPIRE)',
      details: { keys: noTtl.map((k) => k.key) },
    });
  }

  const bigLogs = keys.filter((k) => k.type === 'zset' && k.encoding === 'skiplist');
  if (bigLogs.length > 0) {
    const bytes = bigLogs.reduce((sum, k) => sum + (k.bytes ?? 0), 0);
    const bounded = bigLogs.length * BOUNDED_KEY_BYTES;
    const largest = Math.max(...bigLogs.map((k) => k.entries ?? 0));
    findings.push({
      severity: 'warning',
      code: 'big-log-keys',
      node: address,
      summary:
        `${plural(bigLogs.length, 'log key')} past the compact encoding (skiplist, up to ${largest} entries): ` +
        `${formatBytes(bytes)}; ${names(bigLogs)}`,
      meaning:
        'a log keeps one entry per request (~100 B each past 128); each call removes expired entries, so big logs cost time too',
      action:
        `a bounded-memory window (precisionMs, rate_limit_v2) keeps such a key near ${BOUNDED_KEY_BYTES} B: ` +
        `~${formatBytes(bounded)} instead of ${formatBytes(bytes)} for these keys`,
      details: {
        keys: bigLogs.map((k) => ({ key: k.key, bytes: k.bytes, entries: k.entries })),
        bytes,
        boundedBytes: bounded,
      },
    });
  }
  const bigHashes = keys.filter((k) => k.type === 'hash' && k.encoding === 'hashtable');
  if (bigHashes.length > 0) {
    findings.push({
      severity: 'warning',
      code: 'big-bucketed-keys',
      node: address,
      summary: `${plural(bigHashes.length, 'bounded-memory key')} past the compact encoding (hashtable): ${names(bigHashes)}`,
      meaning: 'more sub-windows than a listpack holds (128 fields): each takes ~56 B instead of ~12 B',
      action: 'choose a larger precisionMs: at most about 120 sub-windows per window (windowMs / precisionMs)',
      details: { keys: bigHashes.map((k) => ({ key: k.key, bytes: k.bytes, entries: k.entries })) },
    });
  }

  const biggest = [...measured].sort((a, b) => (b.bytes ?? 0) - (a.bytes ?? 0)).slice(0, BIGGEST_KEYS);
  findings.push({
    severity: 'ok',
    code: 'biggest-keys',
    node: address,
    summary: `biggest: ${biggest.map((k) => `${k.key} ${formatBytes(k.bytes ?? 0)} (${k.type}${k.entries === null ? '' : ` ${k.entries}`}, ${k.encoding})`).join('; ')}`,
    meaning: 'the keys of the sample that take the most memory',
    action: null,
    details: { keys: biggest },
  });
  return findings;
}

function names(keys: readonly SampledKey[]): string {
  return listSome(keys.map((k) => k.key));
}
