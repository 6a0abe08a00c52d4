import Redis from 'ioredis';
import type { SlidingWindowLimiter } from '../../lib';
import { InstanceReporter } from '../../lib/limiter/instance-reporter';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { useOwnRedisServer } from '../support/own-redis';
import { librarySource } from '../support/lua-functions';
import { useTestLimiters } from '../support/test-limiter';
import { testServerIdentity } from '../support/test-server';
import { waitFor } from '../support/wait-for';
import { doctorJson, findingsOf, notOk, resetOwnServer } from './doctor-helpers';
import { runCli } from './run-cli';

describe('doctor on a standalone Redis', () => {
  const own = useOwnRedisServer();
  let admin: Redis;
  let url: string;
  let address: string;

  beforeAll(() => {
    admin = own.connect();
    url = own.server().url;
    address = `127.0.0.1:${own.server().port}`;
  });
  beforeEach(async () => {
    await resetOwnServer(admin);
  });
  const limiters = useTestLimiters(() => ({ keyPrefix: 'rl:', functionName: 'sliding_allow_v2' }));

  /** What a healthy deployment leaves: v2 loaded, limiter keys with TTLs, one live instance report. */
  async function healthy(): Promise<SlidingWindowLimiter> {
    const client = own.connect();
    const limiter = limiters({ client });
    for (let i = 0; i < 20; i++) await limiter.consume(`user:{${i % 5}}`, { limit: 10, windowMs: 60_000 });
    const reporter = new InstanceReporter({ limiter, client, instanceId: 'app-1', intervalMs: 60_000 });
    await reporter.reportNow();
    return limiter;
  }

  it('finds nothing wrong with a healthy server: exit 0, every finding ok, the --json shape', async () => {
    await healthy();
    const { code, doc } = await doctorJson(['--url', url]);
    expect(notOk(doc)).toEqual([]);
    expect(code).toBe(0);
    expect(doc).toMatchObject({
      ok: true,
      command: 'doctor',
      exitCode: 0,
      servers: [{ node: address, ...testServerIdentity() }],
      keyPrefix: 'rl:',
      sample: 1000,
      nodes: [{ node: address, role: 'master', master: null }],
      called: [{ functionName: 'sliding_allow_v2', version: 'v2', stable: 1, canary: 0 }],
    });
    expect(new Set(doc.findings.map((f) => f.check))).toEqual(
      new Set(['functions', 'memory', 'keys', 'slowness', 'cluster']),
    );
    for (const finding of doc.findings) {
      expect(Object.keys(finding).sort()).toEqual(
        expect.arrayContaining(['action', 'check', 'code', 'meaning', 'node', 'severity', 'summary']),
      );
    }
    expect(findingsOf(doc, 'versions-called')[0].summary).toBe('1 live instance calls sliding_allow_v2 (v2: 1 stable)');
    expect(findingsOf(doc, 'library-ok').map((f) => f.summary)).toEqual([
      'rate_limit_v2 (v2) is loaded with the bundled code on the only node',
    ]);
    expect(findingsOf(doc, 'keys-sampled')[0].details).toMatchObject({ sampled: 5, zsets: 5, hashes: 0 });
    expect(findingsOf(doc, 'memory-unbounded')).toHaveLength(1);
    expect(doc.summary).toEqual({ ok: doc.findings.length, warning: 0, problem: 0 });

    const text = await runCli(['doctor', '--url', url]);
    expect(text.code).toBe(0);
    expect(text.stderr).toBe('');
    expect(text.stdout).toMatch(/^nestjs-sliding-limit doctor: standalone, 1 master, 0 replicas/);
    expect(text.stdout).toContain(
      `\nFunctions (the libraries live instances call, on every node)\n  all nodes\n    ok `,
    );
    expect(text.stdout).toMatch(/\nall good: 0 problems, 0 warnings, \d+ ok \(exit 0\)\n$/);
  });

  it('a limiter key without a TTL is a problem (exit 2) naming the key', async () => {
    await healthy();
    await admin.zadd('rl:orphan:{x}', 1, 'a');
    const { code, doc } = await doctorJson(['--url', url]);
    expect(notOk(doc)).toEqual([`problem key-without-ttl ${address}`]);
    expect(code).toBe(2);
    expect(doc.ok).toBe(false);
    const [finding] = findingsOf(doc, 'key-without-ttl');
    expect(finding.summary).toBe('1 key under rl: without a TTL: rl:orphan:{x}');
    expect(finding.action).toMatch(/DEL them or set a TTL/);

    // Outside the sampled prefix it is not the limiter's key.
    const other = await doctorJson(['--url', url, '--key-prefix', 'rl:user:']);
    expect(notOk(other.doc)).toEqual([]);
    const text = await runCli(['doctor', '--url', url]);
    expect(text.code).toBe(2);
    expect(text.stdout).toContain(
      '    PROBLEM  1 key under rl: without a TTL: rl:orphan:{x}\n' +
        '             means: they never expire and hold memory until deleted; the package sets a TTL on every key it writes\n' +
        '             do: find what writes them',
    );
    expect(text.stdout).toMatch(/\nproblems found: 1 problem, 0 warnings, \d+ ok \(exit 2\)\n$/);
  });

  it('a library whose code is not the bundled code is a problem, with the load --replace command', async () => {
    await admin.call('FUNCTION', 'LOAD', `${librarySource('v2')}\n-- edited by hand\n`);
    const { code, doc } = await doctorJson(['--url', url]);
    expect(notOk(doc)).toEqual([`problem library-differs ${address}`]);
    expect(code).toBe(2);
    const [finding] = findingsOf(doc, 'library-differs');
    expect(finding.summary).toBe(`rate_limit_v2 on ${address} (master) is not the bundled v2 code`);
    expect(finding.action).toBe(
      `if the bundled code is the one to run: npx nestjs-sliding-limit functions load v2 --replace --url ${url}`,
    );
  });

  it('a library the live instances call that is not loaded is a problem, with the load command', async () => {
    await healthy();
    await admin.function('DELETE', 'rate_limit_v2');
    const { code, doc } = await doctorJson(['--url', url]);
    expect(notOk(doc)).toEqual([`problem library-missing ${address}`]);
    expect(code).toBe(2);
    expect(findingsOf(doc, 'library-missing')[0].action).toBe(
      `run: npx nestjs-sliding-limit functions load v2 --url ${url}`,
    );
  });

  it('noeviction with maxmemory and room to spare exits 0; nearly full or over maxmemory is a problem, worded so', async () => {
    await healthy();
    await admin.config('SET', 'maxmemory', String(1024 * 1024 * 1024));
    const roomy = await doctorJson(['--url', url]);
    expect(notOk(roomy.doc)).toEqual([]);
    expect(roomy.code).toBe(0);
    expect(findingsOf(roomy.doc, 'memory-noeviction')[0]).toMatchObject({
      severity: 'ok',
      meaning: expect.stringMatching(/fail with OOM/),
      action: null,
    });

    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
    await admin.config('SET', 'maxmemory', String(used + 64 * 1024));
    const full = await doctorJson(['--url', url]);
    expect(notOk(full.doc)).toEqual([`problem memory-noeviction ${address}`]);
    expect(findingsOf(full.doc, 'memory-noeviction')[0].summary).toMatch(/nearly full/);
    expect(full.code).toBe(2);

    await admin.config('SET', 'maxmemory', String(Math.floor(used * 0.8)));
    const over = await doctorJson(['--url', url]);
    expect(notOk(over.doc)).toEqual([`problem memory-noeviction ${address}`]);
    const [finding] = findingsOf(over.doc, 'memory-noeviction');
    expect(finding.summary).toMatch(/over maxmemory/);
    expect(`${finding.summary} ${finding.action}`).not.toMatch(/nearly/);
    await admin.config('SET', 'maxmemory', '0');
  });

  it.each(['allkeys-lru', 'volatile-lfu'])(
    'maxmemory-policy %s is a warning: limiter keys can be evicted',
    async (policy) => {
      await admin.config('SET', 'maxmemory', String(1024 * 1024 * 1024));
      await admin.config('SET', 'maxmemory-policy', policy);
      const { code, doc } = await doctorJson(['--url', url]);
      expect(notOk(doc)).toEqual([`warning memory-evicts-limiter-keys ${address}`]);
      expect(code).toBe(1);
      expect(findingsOf(doc, 'memory-evicts-limiter-keys')[0]).toMatchObject({
        summary: expect.stringContaining(`maxmemory-policy ${policy}`),
        meaning: expect.stringMatching(/under-count/),
      });
    },
  );

  it('a big log key is a warning that says what the bounded-memory window would save', async () => {
    await healthy();
    const members = Array.from({ length: 2000 }, (_, i) => [i, `m${i}`]).flat();
    await admin.zadd('rl:big:{user:1}', ...members);
    await admin.pexpire('rl:big:{user:1}', 60_000);
    const { code, doc } = await doctorJson(['--url', url]);
    expect(notOk(doc)).toEqual([`warning big-log-keys ${address}`]);
    expect(code).toBe(1);
    const [finding] = findingsOf(doc, 'big-log-keys');
    expect(finding.summary).toMatch(
      /^1 log key past the compact encoding \(skiplist, up to 2000 entries\): \d+\.\d KB; rl:big:\{user:1\}$/,
    );
    expect(finding.action).toMatch(
      /precisionMs, rate_limit_v2\) keeps such a key near 840 B: ~840 B instead of \d+\.\d KB/,
    );
    expect(findingsOf(doc, 'biggest-keys')[0].summary).toMatch(
      /^biggest: rl:big:\{user:1\} \d+\.\d KB \(zset 2000, skiplist\)/,
    );
  });

  it('--sample bounds how many keys are read', async () => {
    await healthy();
    const { doc } = await doctorJson(['--url', url, '--sample', '2']);
    expect(findingsOf(doc, 'keys-sampled')[0].details).toMatchObject({ sampled: 2 });
  });

  it("reports the slow log's entries of the package's functions", async () => {
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    const limiter = await healthy();
    await admin.call('SLOWLOG', 'RESET');
    await limiter.consume('user:{slow}', { limit: 10, windowMs: 60_000 });
    await admin.set('rl:unrelated', 'x', 'PX', 60_000);
    const { doc } = await doctorJson(['--url', url]);
    const [finding] = findingsOf(doc, 'slowlog-function-calls');
    expect(finding).toBeDefined();
    expect(finding.node).toBe(address);
    expect(finding.summary).toMatch(
      /^1 SLOWLOG entry of the package's functions \(it logs commands slower than 0 µs\): sliding_allow_v2 ×1; longest [\d.]+ (µs|ms) \(sliding_allow_v2 on rl:user:\{slow\}\), \d+\.\d% of busy-reply-threshold 5000 ms$/,
    );
    expect(findingsOf(doc, 'slowlog-clean')).toEqual([]);
  });

  it('LATENCY LATEST events are a warning', async () => {
    await admin.config('SET', 'latency-monitor-threshold', '1');
    // A command that blocks the server for some milliseconds: a script counting. (Not a wait on TIME:
    // Valkey keeps a script's TIME fixed while it runs, so such a loop only ends at the busy timeout.)
    await admin.eval('local x = 0 for i = 1, 3000000 do x = x + i end return x', 0);
    await waitFor(
      () => admin.call('LATENCY', 'LATEST'),
      (events) => (events as unknown[]).length > 0,
    );
    const { code, doc } = await doctorJson(['--url', url]);
    expect(notOk(doc)).toEqual([`warning latency-events ${address}`]);
    expect(code).toBe(1);
    // The script's event; a busy host may add others (fast-command, say).
    expect(findingsOf(doc, 'latency-events')[0].summary).toMatch(
      /^LATENCY LATEST: (.+; )?command latest \d+ ms, max \d+ ms/,
    );
  });

  it('a usage error exits 2 without findings; an unreachable Redis keeps exit 3', async () => {
    const usage = await runCli(['doctor', '--sample', 'many', '--json']);
    expect(usage.code).toBe(2);
    expect(usage.json()).toMatchObject({ ok: false, exitCode: 2, error: { kind: 'usage' } });
    expect(usage.json()).not.toHaveProperty('findings');
    for (const [args, message] of [
      [['--sample', '0'], '--sample must be a whole number of keys from 1 to 1000000, got "0"'],
      [['--resp', '4'], '--resp must be 2 or 3, got "4"'],
      [['--key-prefix', 'a b'], '--key-prefix must be a non-empty key prefix without spaces, got "a b"'],
      [['--force'], '--force does not apply to doctor (it is for: functions delete)'],
      [['extra'], 'unexpected argument "extra" for doctor'],
    ]) {
      const run = await runCli(['doctor', ...args]);
      expect([run.code, run.stderr]).toEqual([2, expect.stringContaining(`error: ${message}`)]);
    }
    const flag = await runCli(['functions', 'list', '--key-prefix', 'x:']);
    expect(flag.stderr).toContain(
      '--key-prefix does not apply to functions list (it is for: doctor, overrides set, overrides get, overrides delete, overrides list)',
    );
    const down = await runCli(['doctor', '--url', 'redis://127.0.0.1:1', '--timeout', '500']);
    expect(down.code).toBe(3);
  });
});

describe('doctor on a standalone master with a replica', () => {
  let master: RedisServer;
  let replica: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    // The slow log off: on a busy host a limiter call can pass the default 10 ms.
    master = await startRedisServer(['--repl-diskless-sync-delay', '0', '--slowlog-log-slower-than', '-1']);
    replica = await startRedisServer([
      '--replicaof',
      '127.0.0.1',
      String(master.port),
      '--slowlog-log-slower-than',
      '-1',
    ]);
    admin = new Redis(master.url);
    await admin.call('FUNCTION', 'LOAD', librarySource('v2'));
    const replicaClient = new Redis(replica.url);
    try {
      await waitFor(
        () => admin.info('replication'),
        (info) => info.includes('state=online'),
        { timeoutMs: 15_000 },
      );
      await waitFor(
        () => replicaClient.info('replication'),
        (info) => info.includes('master_link_status:up'),
      );
      await waitFor(
        () => replicaClient.call('FUNCTION', 'LIST'),
        (list) => (list as unknown[]).length > 0,
      );
    } finally {
      replicaClient.disconnect();
    }
  });
  afterAll(async () => {
    admin?.disconnect();
    await replica?.stop();
    await master?.stop();
  });

  it('finds the replica through INFO replication and checks its functions and link', async () => {
    const { code, doc } = await doctorJson(['--url', master.url]);
    expect(notOk(doc)).toEqual([]);
    expect(code).toBe(0);
    expect(doc.nodes).toEqual([
      { node: `127.0.0.1:${master.port}`, role: 'master', master: null },
      { node: `127.0.0.1:${replica.port}`, role: 'replica', master: `127.0.0.1:${master.port}` },
    ]);
    expect(findingsOf(doc, 'library-ok')[0].summary).toBe(
      'rate_limit_v2 (v2) is loaded with the bundled code on all 2 nodes',
    );
    expect(findingsOf(doc, 'replication-ok')[0].summary).toBe('1 replica of 1 master, all linked and in sync');

    // The replica loses its master; --url names the replica, which the doctor checks as one.
    await master.stop();
    const lost = await doctorJson(['--url', replica.url]);
    expect(lost.doc.nodes).toEqual([
      { node: `127.0.0.1:${replica.port}`, role: 'replica', master: `127.0.0.1:${master.port}` },
    ]);
    expect(notOk(lost.doc)).toEqual([`problem replica-link-down 127.0.0.1:${replica.port}`]);
    expect(lost.code).toBe(2);
  });
});

describe('doctor where CONFIG is refused (as on managed Redis)', () => {
  const own = useOwnRedisServer([
    '--rename-command',
    'CONFIG',
    'renamed-config-for-the-test',
    '--slowlog-log-slower-than',
    '-1',
  ]);

  it('reads maxmemory and the policy from INFO memory instead, and says so', async () => {
    const { code, doc } = await doctorJson(['--url', own.server().url]);
    expect(notOk(doc)).toEqual([]);
    expect(code).toBe(0);
    expect(findingsOf(doc, 'memory-unbounded')[0].summary).toMatch(
      /^no maxmemory \(policy noeviction does not apply\); .* used \(from INFO memory: CONFIG GET was refused: ERR unknown command/,
    );
    expect(findingsOf(doc, 'slowness-config-refused')[0].summary).toMatch(
      /^CONFIG GET was refused \(ERR unknown command.*\): compared with the default 5000 ms$/,
    );
  });
});
