import Redis, { type RedisOptions } from 'ioredis';
import type { SlidingWindowLimiter } from '../../lib';
import { InstanceReporter } from '../../lib/limiter/instance-reporter';
import type { DoctorNode } from '../../lib/cli/doctor/doctor-nodes';
import type { FindingInput } from '../../lib/cli/doctor/findings';
import { checkFunctions } from '../../lib/cli/doctor/functions-check';
import { checkKeys } from '../../lib/cli/doctor/keys-sample';
import { checkMemory } from '../../lib/cli/doctor/memory-check';
import { checkSlowness } from '../../lib/cli/doctor/slowness-check';
import { readInstanceReports } from '../../lib/cli/instance-reports';
import { parseConfigGet, parseInfoFields, parseLatencyLatest, parseSlowlog } from '../../lib/cli/doctor/replies';
import { useOwnRedisServer } from '../support/own-redis';
import { testLimiter } from '../support/test-limiter';
import { waitFor } from '../support/wait-for';
import { doctorJson, resetOwnServer } from './doctor-helpers';

/*
 * The doctor reads INFO, CONFIG GET, SLOWLOG, LATENCY, MEMORY USAGE, OBJECT ENCODING and FUNCTION
 * LIST. Under RESP3 some come back in other shapes (CONFIG GET is a map: flat pairs with ioredis'
 * legacy mapping, an object with replyMapping 'resp3'); every shape must give the same findings.
 */
const PROTOCOLS: [string, RedisOptions][] = [
  ['RESP2', { protocol: 2 }],
  ['RESP3 (legacy mapping)', { protocol: 3 }],
  ['RESP3 (replyMapping resp3)', { protocol: 3, replyMapping: 'resp3' }],
];

describe('doctor replies under RESP2 and RESP3', () => {
  const own = useOwnRedisServer();
  let admin: Redis;
  let url: string;
  let limiter: SlidingWindowLimiter;

  beforeAll(async () => {
    admin = own.connect();
    url = own.server().url;
    await resetOwnServer(admin);
    // A server with something to find for every check: slow calls, a latency event, a big key,
    // a key without a TTL, an eviction policy, a live instance report.
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    await admin.config('SET', 'latency-monitor-threshold', '1');
    await admin.config('SET', 'maxmemory', String(1024 * 1024 * 1024));
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lfu');
    const client = own.connect();
    limiter = testLimiter({ client, keyPrefix: 'rl:', functionName: 'sliding_allow_v2' });
    for (let i = 0; i < 10; i++) await limiter.consume(`user:{${i % 3}}`, { limit: 10, windowMs: 60_000 });
    // Nothing more may reach the slow log (it keeps 128 entries) but the limiter's calls above.
    await admin.config('SET', 'slowlog-log-slower-than', '-1');
    await new InstanceReporter({ limiter, client, instanceId: 'app-1', intervalMs: 60_000 }).reportNow();
    await admin.zadd('rl:big:{1}', ...Array.from({ length: 300 }, (_, i) => [i, `m${i}`]).flat());
    await admin.pexpire('rl:big:{1}', 60_000);
    await admin.set('rl:forever', '1');
    // A latency event: a script counting for some milliseconds (a wait on TIME never ends on Valkey,
    // which keeps a script's TIME fixed, until the busy timeout).
    await admin.eval('local x = 0 for i = 1, 3000000 do x = x + i end return x', 0);
    await waitFor(
      () => admin.call('LATENCY', 'LATEST'),
      (events) => (events as unknown[]).length > 0,
    );
  });
  afterAll(async () => {
    await limiter?.close();
  });

  it('parses the raw replies of each protocol to the same values', async () => {
    const parsed = [];
    for (const [, options] of PROTOCOLS) {
      const client = own.connect((u) => new Redis(u, options));
      parsed.push({
        config: parseConfigGet(await client.call('CONFIG', 'GET', 'maxmemory*')),
        info: Object.fromEntries(parseInfoFields(await client.info('replication'))),
        slowlog: parseSlowlog(await client.call('SLOWLOG', 'GET', 128)).map(({ id, args }) => ({ id, args })),
        latency: parseLatencyLatest(await client.call('LATENCY', 'LATEST')),
      });
    }
    expect(parsed[0].config).toMatchObject({
      maxmemory: String(1024 * 1024 * 1024),
      'maxmemory-policy': 'allkeys-lfu',
    });
    expect(parsed[0].slowlog.some((e) => e.args[0].toUpperCase() === 'FCALL')).toBe(true);
    expect(parsed[0].latency.map((e) => e.event)).toContain('command');
    for (const other of parsed.slice(1)) {
      expect(other.config).toEqual(parsed[0].config);
      expect(other.slowlog).toEqual(parsed[0].slowlog);
      expect(other.latency).toEqual(parsed[0].latency);
      expect(Object.keys(other.info).sort()).toEqual(Object.keys(parsed[0].info).sort());
    }
  });

  it('every check gives the same findings whichever protocol its client speaks', async () => {
    const results = [];
    for (const [, options] of PROTOCOLS) {
      const client = own.connect((u) => new Redis(u, options));
      const nodes: DoctorNode[] = [{ client, address: 'node', role: 'master' }];
      const { reports } = await readInstanceReports([client], undefined);
      const suggest = (command: string) => command;
      results.push({
        functions: (await checkFunctions(nodes, reports, suggest)).findings,
        memory: (await checkMemory(nodes)).map(({ severity, code, summary }) => ({
          severity,
          code,
          // used_memory moves between two reads.
          summary: summary.replace(/[\d.]+ [KMG]?B of/, 'N of'),
        })),
        // A TTL moves between two reads.
        keys: JSON.parse(
          JSON.stringify(await checkKeys(nodes, 'rl:', 1000)).replace(/"ttlMs":\d+/g, '"ttlMs":1'),
        ) as FindingInput[],
        slowness: (await checkSlowness(nodes)).map(({ severity, code }) => ({ severity, code })),
      });
    }
    expect(results[0].functions.map((f) => f.code)).toEqual(['versions-called', 'library-ok']);
    expect(results[0].memory).toEqual([
      expect.objectContaining({ severity: 'warning', code: 'memory-evicts-limiter-keys' }),
    ]);
    expect(results[0].keys.map((f) => `${f.severity} ${f.code}`)).toEqual([
      'ok keys-sampled',
      'problem key-without-ttl',
      'warning big-log-keys',
      'ok biggest-keys',
    ]);
    expect(results[0].slowness).toEqual([
      expect.objectContaining({ code: 'slowlog-function-calls' }),
      { severity: 'warning', code: 'latency-events' },
    ]);
    for (const other of results.slice(1)) expect(other).toEqual(results[0]);
  });

  it.each(['2', '3'])('the CLI with --resp %s finds the same', async (resp) => {
    const { code, doc } = await doctorJson(['--url', url, '--resp', resp]);
    expect(code).toBe(2);
    const reference = await doctorJson(['--url', url]);
    const shape = (d: typeof doc) => d.findings.map((f) => `${f.check} ${f.severity} ${f.code}`);
    expect(shape(doc)).toEqual(shape(reference.doc));
    expect(shape(doc)).toContain('keys problem key-without-ttl');
  });
});
