import { hostname } from 'node:os';
import Redis from 'ioredis';
import { RateLimitConfigError, SlidingWindowLimiter } from '../../lib';
import { INSTANCE_REPORT_MATCH, instanceReportKey, parseInstanceReport } from '../../lib/core/instance-report';
import { InstanceReporter } from '../../lib/limiter/instance-reporter';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { connectShared, uniquePrefix } from '../support/test-redis';
import { sleep } from '../support/sleep';
import { waitFor } from '../support/wait-for';

const rule = { limit: 2, windowMs: 60_000 };

describe('InstanceReporter', () => {
  let redis: Redis;
  const reporters: InstanceReporter[] = [];
  beforeAll(() => {
    redis = connectShared();
  });
  afterEach(() => {
    for (const reporter of reporters.splice(0)) reporter.stop();
  });
  afterAll(() => redis.quit());

  function track(reporter: InstanceReporter): InstanceReporter {
    reporters.push(reporter);
    return reporter;
  }

  it('writes the selection and the per-function counters under the key prefix, with a TTL of three intervals', async () => {
    const keyPrefix = uniquePrefix('report');
    const limiter = new SlidingWindowLimiter({
      client: redis,
      keyPrefix,
      functionName: 'sliding_allow_v1',
      canary: { functionName: 'sliding_allow_v2', percent: 50 },
    });
    const keys = Array.from({ length: 40 }, (_, i) => `user:${i}`);
    for (let round = 0; round < 3; round++) await Promise.all(keys.map((key) => limiter.consume(key, rule)));
    const reporter = track(new InstanceReporter({ limiter, client: redis, intervalMs: 2000, instanceId: 'web-1' }));

    await reporter.reportNow();

    const key = `${keyPrefix}__nsl:instance:web-1`;
    expect(reporter.key).toBe(key);
    expect(instanceReportKey(keyPrefix, 'web-1')).toBe(key);
    const pttl = await redis.pttl(key);
    expect(pttl).toBeGreaterThan(5000);
    expect(pttl).toBeLessThanOrEqual(6000);
    const stored = JSON.parse((await redis.get(key)) as string);
    expect(stored).toEqual({
      instanceId: 'web-1',
      host: hostname(),
      pid: process.pid,
      startedAt: expect.any(String),
      reportedAt: expect.any(String),
      intervalMs: 2000,
      functionName: 'sliding_allow_v1',
      canary: { functionName: 'sliding_allow_v2', percent: 50 },
      functions: expect.any(Array),
    });
    expect(Date.parse(stored.reportedAt)).toBeGreaterThanOrEqual(Date.parse(stored.startedAt));
    // 40 keys × 3 rounds at a limit of 2: 80 allowed, 40 rejected, split between the versions.
    const byName = Object.fromEntries(
      (stored.functions as { functionName: string; calls: number; allowed: number; rejected: number }[]).map((f) => [
        f.functionName,
        f,
      ]),
    );
    expect(Object.keys(byName).sort()).toEqual(['sliding_allow_v1', 'sliding_allow_v2']);
    expect(byName.sliding_allow_v1.calls + byName.sliding_allow_v2.calls).toBe(120);
    expect(byName.sliding_allow_v1.allowed + byName.sliding_allow_v2.allowed).toBe(80);
    expect(byName.sliding_allow_v1.rejected + byName.sliding_allow_v2.rejected).toBe(40);
    expect(stored.functions).toEqual(limiter.metrics.snapshot());
    expect(parseInstanceReport(await redis.get(key))).toEqual(stored);
    expect(reporter.lastError).toBeUndefined();
    expect(reporter.lastReportedAt).toBeInstanceOf(Date);
  });

  it('reports at once on start(), then every interval with what changed, and stops writing on stop() without deleting the key', async () => {
    const keyPrefix = uniquePrefix('interval');
    const limiter = new SlidingWindowLimiter({ client: redis, keyPrefix, functionName: 'sliding_allow_v2' });
    const reporter = track(new InstanceReporter({ limiter, client: redis, intervalMs: 100, instanceId: 'api-7' }));
    reporter.start();
    reporter.start(); // idempotent: still one timer
    expect(reporter.running).toBe(true);
    expect((reporter as unknown as { timer: NodeJS.Timeout }).timer.hasRef()).toBe(false);

    const first = await waitFor(
      async () => parseInstanceReport(await redis.get(reporter.key)),
      (report) => report !== undefined,
    );
    expect(first?.functions).toEqual([]);

    await limiter.consume('k', rule);
    const later = await waitFor(
      async () => parseInstanceReport(await redis.get(reporter.key)),
      (report) => report?.functions[0]?.calls === 1,
    );
    expect(later?.functions).toEqual([
      expect.objectContaining({ functionName: 'sliding_allow_v2', calls: 1, allowed: 1 }),
    ]);
    expect(Date.parse(later!.reportedAt)).toBeGreaterThan(Date.parse(first!.reportedAt));

    // A runtime switch shows in the next report.
    await limiter.use({ functionName: 'sliding_allow_v2', canary: { functionName: 'sliding_allow_v1', percent: 5 } });
    const switched = await waitFor(
      async () => parseInstanceReport(await redis.get(reporter.key)),
      (report) => report?.canary !== null,
    );
    expect(switched?.canary).toEqual({ functionName: 'sliding_allow_v1', percent: 5 });

    reporter.stop();
    expect(reporter.running).toBe(false);
    await sleep(50); // a report in flight at stop() lands now
    expect(await redis.pttl(reporter.key)).toBeGreaterThan(0); // left to expire
    await redis.del(reporter.key);
    await sleep(350);
    expect(await redis.exists(reporter.key)).toBe(0);
  });

  it('never throws from the timer: a failed report is kept in lastError and retried on the next tick', async () => {
    // A server of our own that refuses writes for a while (NOREPLICAS), then accepts them again.
    const server: RedisServer = await startRedisServer();
    const client = new Redis(server.url);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const limiter = new SlidingWindowLimiter({ client, keyPrefix: 'rl:' });
      const reporter = track(new InstanceReporter({ limiter, client, intervalMs: 100, instanceId: 'flaky' }));
      await client.config('SET', 'min-replicas-to-write', '1');
      reporter.start();
      await waitFor(
        async () => reporter.lastError,
        (error) => error !== undefined,
      );
      expect(reporter.lastError?.message).toMatch(/NOREPLICAS/);
      await expect(reporter.reportNow()).rejects.toThrow(/NOREPLICAS/);
      await sleep(250); // more failed ticks, none thrown
      expect(reporter.running).toBe(true);
      expect(reporter.lastReportedAt).toBeUndefined();
      expect(await client.exists('rl:__nsl:instance:flaky')).toBe(0);

      await client.config('SET', 'min-replicas-to-write', '0');
      const stored = await waitFor(
        () => client.get('rl:__nsl:instance:flaky'),
        (value) => value !== null,
      );
      expect(parseInstanceReport(stored)?.instanceId).toBe('flaky');
      await waitFor(
        async () => reporter.lastError,
        (error) => error === undefined,
      );
      expect(reporter.lastError).toBeUndefined();
      expect(reporter.lastReportedAt).toBeInstanceOf(Date);
      reporter.stop();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await client.quit();
      await server.stop();
    }
  });

  it('rejects bad options, naming each', () => {
    const limiter = new SlidingWindowLimiter({ client: redis });
    expect(() => new InstanceReporter({ limiter, client: redis, intervalMs: 10, instanceId: 'has space' })).toThrow(
      RateLimitConfigError,
    );
    try {
      new InstanceReporter({ limiter, client: undefined as unknown as Redis, intervalMs: 1.5, instanceId: '' });
    } catch (error) {
      expect((error as RateLimitConfigError).problems).toEqual([
        expect.stringMatching(/^client must be/),
        expect.stringMatching(/^intervalMs must be/),
        expect.stringMatching(/^instanceId must be/),
      ]);
    }
    expect.assertions(2);
  });

  it('defaults to a unique instance id made of host and pid, and a 15 s interval', () => {
    const limiter = new SlidingWindowLimiter({ client: redis });
    const a = new InstanceReporter({ limiter, client: redis });
    const b = new InstanceReporter({ limiter, client: redis });
    expect(a.intervalMs).toBe(15_000);
    expect(a.instanceId.startsWith(`${hostname()}:${process.pid}:`)).toBe(true);
    expect(a.instanceId).not.toBe(b.instanceId);
    expect(a.key).toBe(`rl:__nsl:instance:${a.instanceId}`);
  });
});

describe('instance report keys and parsing', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = connectShared();
  });
  afterAll(() => redis.quit());

  it('matches the reports of one prefix literally, even when the prefix holds glob characters', async () => {
    const base = uniquePrefix('glob');
    const odd = `${base}a*[b]?:`;
    await redis.set(instanceReportKey(odd, 'one'), '{}', 'PX', 60_000);
    await redis.set(instanceReportKey(`${base}aXXbY:`, 'two'), '{}', 'PX', 60_000);
    await redis.set(`${odd}other`, '{}', 'PX', 60_000);
    const [, keys] = await redis.scan('0', 'MATCH', INSTANCE_REPORT_MATCH(odd), 'COUNT', 100_000);
    expect(keys).toEqual([instanceReportKey(odd, 'one')]);
    const [, all] = await redis.scan(
      '0',
      'MATCH',
      `${base.replace(/[*?[\]\\]/g, '\\$&')}${INSTANCE_REPORT_MATCH()}`,
      'COUNT',
      100_000,
    );
    expect(all.sort()).toEqual([instanceReportKey(`${base}aXXbY:`, 'two'), instanceReportKey(odd, 'one')].sort());
  });

  const valid = {
    instanceId: 'i',
    host: 'h',
    pid: 1,
    startedAt: '2025-01-01T00:00:00.000Z',
    reportedAt: '2025-01-01T00:00:15.000Z',
    intervalMs: 15000,
    functionName: 'sliding_allow_v2',
    canary: null,
    functions: [
      {
        functionName: 'sliding_allow_v2',
        calls: 3,
        allowed: 2,
        rejected: 0,
        errors: { timeout: 1 },
        latencyMs: { count: 3, p50: 0.2, p90: 0.3, p99: 0.4, max: 0.5 },
      },
    ],
  };

  it('parses a well-formed report, from text or a buffer, keeping counters it does not know', () => {
    expect(parseInstanceReport(JSON.stringify(valid))).toEqual(valid);
    const newer = { ...valid, functions: [{ ...valid.functions[0], fallbacks: { allow: 2 }, blockedLocally: 3 }] };
    expect(parseInstanceReport(JSON.stringify(newer))).toEqual(newer);
    expect(
      parseInstanceReport(
        JSON.stringify({ ...valid, functions: [{ ...valid.functions[0], fallbacks: { allow: 'x' } }] }),
      ),
    ).toBeUndefined();
    expect(
      parseInstanceReport(
        Buffer.from(JSON.stringify({ ...valid, canary: { functionName: 'sliding_allow_v1', percent: 12.5 } })),
      )?.canary,
    ).toEqual({
      functionName: 'sliding_allow_v1',
      percent: 12.5,
    });
  });

  it.each([
    ['not JSON', '{"instanceId":'],
    ['null', null],
    ['a number', 42],
    ['an array', '[]'],
    ['JSON null', 'null'],
    ['no instance id', JSON.stringify({ ...valid, instanceId: '' })],
    ['a bad pid', JSON.stringify({ ...valid, pid: -1 })],
    ['a bad date', JSON.stringify({ ...valid, reportedAt: 'yesterday' })],
    ['a zero interval', JSON.stringify({ ...valid, intervalMs: 0 })],
    ['no function name', JSON.stringify({ ...valid, functionName: 7 })],
    ['a bad canary', JSON.stringify({ ...valid, canary: { functionName: 'x', percent: 300 } })],
    ['functions not an array', JSON.stringify({ ...valid, functions: {} })],
    ['a bad counter', JSON.stringify({ ...valid, functions: [{ ...valid.functions[0], calls: 'many' }] })],
    [
      'a bad error count',
      JSON.stringify({ ...valid, functions: [{ ...valid.functions[0], errors: { timeout: -1 } }] }),
    ],
    ['no latency', JSON.stringify({ ...valid, functions: [{ ...valid.functions[0], latencyMs: undefined }] })],
  ])('returns undefined, never throws, for %s', (_label, text) => {
    expect(parseInstanceReport(text)).toBeUndefined();
  });
});
