import type Redis from 'ioredis';
import { InstanceReporter } from '../../lib/limiter/instance-reporter';
import { useInstanceReporters } from '../support/instance-reporters';
import { useOwnRedisServer } from '../support/own-redis';
import { libraryNames } from '../support/redis-inspect';
import { testLimiter } from '../support/test-limiter';
import { testServerIdentity } from '../support/test-server';
import { runCli } from './run-cli';
import { waitUntil } from '../support/wait-for';

const rule = { limit: 3, windowMs: 60_000 };

interface StatusJson {
  ok: boolean;
  prefix: string | null;
  instances: { instanceId: string; prefix: string; functionName: string; canary: unknown; key: string }[];
  functions: {
    functionName: string;
    version: string | null;
    stable: string[];
    canary: { instanceId: string; percent: number }[];
    calls: number;
    allowed: number;
    rejected: number;
    errorCount: number;
    rejectionRate: number | null;
    errorRate: number | null;
  }[];
  unreadable: { key: string }[];
}

describe('functions status and delete (standalone, reports from real limiters)', () => {
  const own = useOwnRedisServer();
  let redis: Redis;
  let url: string;
  const reporterOf = useInstanceReporters();

  beforeAll(() => {
    redis = own.connect();
    url = own.server().url;
  });
  own.emptyBeforeEach();

  /** A limiter that has made `keys` × 4 calls at a limit of 3 (so 1 in 4 is rejected), and its reporter. */
  async function instance(
    id: string,
    keyPrefix: string,
    functionName: string,
    canary?: { functionName: string; percent: number },
  ) {
    const limiter = testLimiter({ client: redis, keyPrefix, functionName, canary });
    for (let round = 0; round < 4; round++)
      await Promise.all(Array.from({ length: 50 }, (_, i) => limiter.consume(`user:${i}`, rule)));
    const reporter = reporterOf({ limiter, client: redis, instanceId: id, intervalMs: 60_000 });
    await reporter.reportNow();
    return { limiter, reporter };
  }

  it('status shows which versions live instances call, with counts and rates, under every prefix or one', async () => {
    await instance('web-1', 'rl:', 'sliding_allow_v1', { functionName: 'sliding_allow_v2', percent: 20 });
    await instance('billing-1', 'billing:', 'sliding_allow_v2');
    await redis.set('rl:__nsl:instance:garbage', 'not a report', 'PX', 60_000);

    const run = await runCli(['functions', 'status', '--url', url, '--json']);
    expect(run.code).toBe(0);
    const status = run.json<StatusJson>();
    expect(status.prefix).toBeNull();
    expect(status.instances.map((i) => [i.instanceId, i.prefix, i.functionName])).toEqual([
      ['billing-1', 'billing:', 'sliding_allow_v2'],
      ['web-1', 'rl:', 'sliding_allow_v1'],
    ]);
    expect(status.unreadable.map((u) => u.key)).toEqual(['rl:__nsl:instance:garbage']);
    const [v1, v2] = status.functions;
    expect(v1).toMatchObject({ functionName: 'sliding_allow_v1', version: 'v1', stable: ['web-1'], canary: [] });
    expect(v2).toMatchObject({
      functionName: 'sliding_allow_v2',
      version: 'v2',
      stable: ['billing-1'],
      canary: [{ instanceId: 'web-1', percent: 20 }],
    });
    // 2 instances × 50 keys × 4 rounds, 1 in 4 rejected, no errors.
    expect(v1.calls + v2.calls).toBe(400);
    expect(v1.rejected + v2.rejected).toBe(100);
    expect(v1.rejectionRate).toBeCloseTo(0.25, 10);
    expect(v2.rejectionRate).toBeCloseTo(0.25, 10);
    expect(v2.errorRate).toBe(0);
    expect(v2.calls).toBeGreaterThan(200); // billing-1's 200 plus web-1's canary share

    const text = await runCli(['functions', 'status', '--url', url]);
    expect(text.stdout).toMatch(/^2 live instances under every key prefix\./);
    expect(text.stdout).toMatch(/sliding_allow_v2\s+v2\s+1\s+1 \(20%\)\s+\d+\s+25\.0%\s+0\.0%/);
    expect(text.stdout).toMatch(/web-1\s+rl:\s+\S+\s+\d+\s+\d+s ago\s+sliding_allow_v1\s+sliding_allow_v2 20%/);
    expect(text.stdout).toContain(
      'Ignored 1 key that match the report pattern but hold no report: rl:__nsl:instance:garbage',
    );

    const narrowed = await runCli(['functions', 'status', '--url', url, '--prefix', 'billing:', '--json']);
    expect(narrowed.json<StatusJson>().instances.map((i) => i.instanceId)).toEqual(['billing-1']);
    expect(narrowed.json<StatusJson>().functions.map((f) => [f.functionName, f.calls])).toEqual([
      ['sliding_allow_v2', 200],
    ]);
  });

  it('status says how instances report when there is none', async () => {
    const run = await runCli(['functions', 'status', '--url', url, '--prefix', 'nobody:']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('No live instance reports under key prefix "nobody:"');
  });

  it('delete refuses while a live instance calls the version (stable or canary), naming the instances; switching callers first lets it through', async () => {
    const web = await instance('web-1', 'rl:', 'sliding_allow_v1', { functionName: 'sliding_allow_v2', percent: 10 });
    await instance('billing-1', 'billing:', 'sliding_allow_v2');
    expect(await libraryNames(redis)).toEqual(['rate_limit_v1', 'rate_limit_v2']);

    const refusedV2 = await runCli(['functions', 'delete', 'v2', '--url', url]);
    expect(refusedV2.code).toBe(1);
    expect(refusedV2.stdout).toMatch(/^Refused: 2 live instances still call rate_limit_v2:/);
    expect(refusedV2.stdout).toMatch(/billing-1 .*prefix billing:\s+calls sliding_allow_v2/);
    expect(refusedV2.stdout).toMatch(/web-1 .*prefix rl:\s+canary → sliding_allow_v2/);
    expect(refusedV2.stderr).toBe('error: rate_limit_v2 is in use by billing-1, web-1; not deleted\n');

    const refusedV1 = await runCli(['functions', 'delete', 'rate_limit_v1', '--url', url, '--json']);
    expect(refusedV1.code).toBe(1);
    expect(refusedV1.json()).toEqual({
      ok: false,
      command: 'functions delete',
      exitCode: 1,
      servers: [{ node: `127.0.0.1:${own.server().port}`, ...testServerIdentity() }],
      library: 'rate_limit_v1',
      version: 'v1',
      force: false,
      callers: [
        {
          instanceId: 'web-1',
          host: expect.any(String),
          pid: process.pid,
          prefix: 'rl:',
          functionName: 'sliding_allow_v1',
          as: 'functionName',
        },
      ],
      refused: true,
      nodes: [],
      error: { kind: 'failed', message: 'rate_limit_v1 is in use by web-1; not deleted' },
    });
    // --prefix narrows the check to the reports of one application.
    expect(
      (await runCli(['functions', 'delete', 'v1', '--url', url, '--prefix', 'billing:', '--json'])).json<{
        refused: boolean;
      }>().refused,
    ).toBe(false);
    await runCli(['functions', 'load', 'v1', '--url', url]);
    expect(await libraryNames(redis)).toEqual(['rate_limit_v1', 'rate_limit_v2']);

    // Promote v2 on web-1: switch the caller, report, then v1 has no caller left.
    await web.limiter.use('sliding_allow_v2');
    await web.reporter.reportNow();
    const status = (await runCli(['functions', 'status', '--url', url, '--json'])).json<StatusJson>();
    expect(status.functions.find((f) => f.functionName === 'sliding_allow_v1')).toMatchObject({
      stable: [],
      canary: [],
    });
    const deleted = await runCli(['functions', 'delete', 'v1', '--url', url, '--json']);
    expect(deleted.code).toBe(0);
    expect(deleted.json()).toMatchObject({
      ok: true,
      refused: false,
      callers: [],
      nodes: [{ node: `127.0.0.1:${own.server().port}`, result: 'deleted' }],
    });
    expect(await libraryNames(redis)).toEqual(['rate_limit_v2']);

    // Deleting what is not there is not an error for a shipped version (a re-run deploy step).
    const again = await runCli(['functions', 'delete', 'v1', '--url', url]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('rate_limit_v1 was not loaded on any master; nothing to delete.');
  });

  it('delete --force deletes while callers remain, and names them', async () => {
    await instance('web-1', 'rl:', 'sliding_allow_v2');
    const run = await runCli(['functions', 'delete', 'v2', '--force', '--url', url]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/deleted/);
    expect(run.stdout).toMatch(/Deleted with --force while 1 caller remained:\n {2}- web-1/);
    expect(await libraryNames(redis)).toEqual([]);
  });

  it('a stopped instance stops blocking once its report expires (three intervals)', async () => {
    const limiter = testLimiter({ client: redis, functionName: 'sliding_allow_v1' });
    await limiter.consume('k', rule);
    // Rewritten every 500 ms, alive for 1.5 s: a loaded host's late timer does not let it lapse while it runs.
    const reporter = reporterOf({ limiter, client: redis, instanceId: 'short-lived', intervalMs: 500 });
    reporter.start();
    await waitUntil(async () => (await redis.exists(reporter.key)) === 1);
    expect((await runCli(['functions', 'delete', 'v1', '--url', url])).code).toBe(1);
    reporter.stop();
    // Left to expire, not deleted: gone three intervals (1.5 s) after its last write.
    await waitUntil(async () => (await redis.exists(reporter.key)) === 0);
    const run = await runCli(['functions', 'delete', 'v1', '--url', url]);
    expect(run.code).toBe(0);
    expect(await libraryNames(redis)).toEqual([]);
  });

  it('delete of a library that is nowhere fails (1), and a bad name is a usage error (2)', async () => {
    const missing = await runCli(['functions', 'delete', 'no_such_lib', '--url', url]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      `no library named no_such_lib on any master; npx nestjs-sliding-limit functions list --url ${url} shows what is loaded`,
    );
    const bad = await runCli(['functions', 'delete', 'no-such*lib', '--url', url]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is neither a shipped version');
  });

  it('delete of a library this package does not ship checks the functions it registers', async () => {
    await redis.call(
      'FUNCTION',
      'LOAD',
      "#!lua name=custom_lib\nredis.register_function('custom_fn', function() return 1 end)",
    );
    const limiter = testLimiter({ client: redis, functionName: 'sliding_allow_v2' });
    const reporter = new InstanceReporter({ limiter, client: redis, instanceId: 'x', intervalMs: 60_000 });
    await reporter.reportNow();
    // A report naming custom_fn (as a future package version could): the library is in use.
    const report = JSON.parse((await redis.get(reporter.key)) as string);
    await redis.set(reporter.key, JSON.stringify({ ...report, functionName: 'custom_fn' }), 'PX', 60_000);
    expect((await runCli(['functions', 'delete', 'custom_lib', '--url', url])).code).toBe(1);
    await redis.del(reporter.key);
    expect((await runCli(['functions', 'delete', 'custom_lib', '--url', url])).code).toBe(0);
    expect(await libraryNames(redis)).toEqual([]);
  });
});
