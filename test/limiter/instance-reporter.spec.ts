import { hostname } from 'node:os';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import { RateLimitConfigError, RateLimitModule } from '../../lib';
import { INSTANCE_REPORT_MATCH, instanceReportKey, parseInstanceReport } from '../../lib/core/instance-report';
import { InstanceReporter, REPORT_DELETE_TIMEOUT_MS, type ReportedLimiter } from '../../lib/limiter/instance-reporter';
import { runCli } from '../cli/run-cli';
import { useInstanceReporters } from '../support/instance-reporters';
import { RedisServer, startRedisServer, startRedisServerOnPort } from '../support/redis-server';
import { TEST_LIMITER_SETTINGS, testLimiter } from '../support/test-limiter';
import { sharedRedisUrl, uniquePrefix, useSharedClient } from '../support/test-redis';
import { sleep } from '../support/sleep';
import { waitFor } from '../support/wait-for';

const rule = { limit: 2, windowMs: 60_000 };

describe('InstanceReporter', () => {
  const redis = useSharedClient();
  const reporterOf = useInstanceReporters();

  it('writes the selection and the per-function counters under the key prefix, with a TTL of three intervals', async () => {
    const keyPrefix = uniquePrefix('report');
    const limiter = testLimiter({
      client: redis,
      keyPrefix,
      functionName: 'sliding_allow_v1',
      canary: { functionName: 'sliding_allow_v2', percent: 50 },
    });
    // Started first: a decision made before start-up has finished is the failure policy's, on v1 only.
    await limiter.init();
    const keys = Array.from({ length: 40 }, (_, i) => `user:${i}`);
    for (let round = 0; round < 3; round++) await Promise.all(keys.map((key) => limiter.consume(key, rule)));
    const reporter = reporterOf({ limiter, client: redis, intervalMs: 2000, instanceId: 'web-1' });

    await reporter.reportNow();

    const key = `${keyPrefix}__nsl:instance:web-1`;
    expect(reporter.key).toBe(key);
    expect(instanceReportKey(keyPrefix, 'web-1')).toBe(key);
    // Three intervals: more than two, less what a loaded host takes to ask.
    const pttl = await redis.pttl(key);
    expect(pttl).toBeGreaterThan(2 * 2000);
    expect(pttl).toBeLessThanOrEqual(3 * 2000);
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
    const limiter = testLimiter({ client: redis, keyPrefix, functionName: 'sliding_allow_v2' });
    // Every 250 ms, alive 750 ms: no late timer of a loaded host lets the report lapse while it runs.
    const reporter = reporterOf({ limiter, client: redis, intervalMs: 250, instanceId: 'api-7' });
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
      (report) => report !== undefined && report.canary !== null,
    );
    expect(switched?.canary).toEqual({ functionName: 'sliding_allow_v1', percent: 5 });

    reporter.stop();
    expect(reporter.running).toBe(false);
    // A report in flight at stop() went out on this connection before the PTTL: Redis answers in order.
    expect(await redis.pttl(reporter.key)).toBeGreaterThan(0); // left to expire
    await redis.del(reporter.key);
    await sleep(875); // three intervals and a half, in which a running timer would have written again
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
      const limiter = testLimiter({ client, keyPrefix: 'rl:' });
      const reporter = reporterOf({ limiter, client, intervalMs: 100, instanceId: 'flaky' });
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
    const limiter = testLimiter({ client: redis });
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
    const limiter = testLimiter({ client: redis });
    const a = new InstanceReporter({ limiter, client: redis });
    const b = new InstanceReporter({ limiter, client: redis });
    expect(a.intervalMs).toBe(15_000);
    expect(a.instanceId.startsWith(`${hostname()}:${process.pid}:`)).toBe(true);
    expect(a.instanceId).not.toBe(b.instanceId);
    expect(a.key).toBe(`rl:__nsl:instance:${a.instanceId}`);
  });
});

/** The instances `functions status --json` lists under `prefix`, with their calls. */
async function listed(prefix: string): Promise<{ instanceId: string; calls: number }[]> {
  const run = await runCli(['functions', 'status', '--url', sharedRedisUrl(), '--prefix', prefix, '--json']);
  expect(run.code).toBe(0);
  const { instances } = run.json<{ instances: { instanceId: string; functions: { calls: number }[] }[] }>();
  return instances.map(({ instanceId, functions }) => ({
    instanceId,
    calls: functions.reduce((sum, f) => sum + f.calls, 0),
  }));
}

describe('an instance in functions status, from start-up to shutdown', () => {
  const redis = useSharedClient();

  it('is listed once init() resolves, shows its calls within a second of its first decisions, and is gone as soon as close() resolves', async () => {
    const keyPrefix = uniquePrefix('lifecycle');
    const limiter = testLimiter({ client: redis, keyPrefix, report: { instanceId: 'web-1' } });
    await limiter.init();
    // The start-up report is sent as start-up ends; the CLI's own connection finds it.
    expect(await listed(keyPrefix)).toEqual([{ instanceId: 'web-1', calls: 0 }]);

    // Decisions until the report shows some: one made a second after the last report reports them
    // all so far. Far sooner than the first interval (15 s), which is when it would show them otherwise.
    let decisions = 0;
    await waitFor(
      async () => {
        await limiter.consume(`user:${decisions++ % 5}`, rule);
        return parseInstanceReport(await redis.get(instanceReportKey(keyPrefix, 'web-1')));
      },
      (report) => (report?.functions[0]?.calls ?? 0) > 0,
      { timeoutMs: 10_000 },
    );
    const [shown] = await listed(keyPrefix);
    expect(shown.instanceId).toBe('web-1');
    expect(shown.calls).toBeGreaterThan(0);
    expect(shown.calls).toBeLessThanOrEqual(decisions);

    await limiter.close();
    expect(await listed(keyPrefix)).toEqual([]);
    expect(await redis.exists(instanceReportKey(keyPrefix, 'web-1'))).toBe(0);
    // Closing is final: later decisions, a switch, or a second close() write no report.
    await limiter.consume('user:late', rule);
    await limiter.use('sliding_allow_v1');
    await limiter.close();
    expect(await redis.exists(instanceReportKey(keyPrefix, 'web-1'))).toBe(0);
  });

  it('a report still in flight at close() does not bring the key back (Redis runs SET, then DEL)', async () => {
    const keyPrefix = uniquePrefix('inflight');
    const limiter: ReportedLimiter = { keyPrefix, functionName: 'sliding_allow_v2', metrics: { snapshot: () => [] } };
    for (let i = 0; i < 20; i++) {
      const reporter = new InstanceReporter({ limiter, client: redis, instanceId: `i-${i}` });
      reporter.start(); // its first SET is on the wire
      await reporter.close();
      expect(await redis.exists(reporter.key)).toBe(0);
    }
  });

  it('closing through the Nest module (app.close()) removes the report, on its own connection or a client passed in', async () => {
    for (const options of [{ redis: sharedRedisUrl() }, { client: redis }]) {
      const keyPrefix = uniquePrefix('nest-close');
      const moduleRef = await Test.createTestingModule({
        imports: [
          RateLimitModule.forRoot({ ...TEST_LIMITER_SETTINGS, ...options, keyPrefix, report: { instanceId: 'api-1' } }),
        ],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      expect(await listed(keyPrefix)).toEqual([{ instanceId: 'api-1', calls: 0 }]);
      await app.close();
      expect(await listed(keyPrefix)).toEqual([]);
    }
    expect(redis.status).toBe('ready'); // a client passed in stays open
  });

  it('close() waits at most 500 ms for a frozen Redis and not at all for one that is down; it never rejects', async () => {
    let server = await startRedisServer();
    const client = new Redis(server.url, { retryStrategy: () => 50 });
    client.on('error', () => undefined);
    const limiter: ReportedLimiter = {
      keyPrefix: 'rl:',
      functionName: 'sliding_allow_v2',
      metrics: { snapshot: () => [] },
    };
    try {
      const quitted = new Redis(server.url);
      await quitted.quit();
      const ended = new InstanceReporter({ limiter, client: quitted, instanceId: 'ended' });
      (ended as unknown as { sent: boolean }).sent = true; // as if it had reported before its client quit
      await expect(ended.close()).resolves.toBeUndefined();
      // Not waited for (the client is not ready), and kept rather than thrown.
      const error = await waitFor(
        () => ended.lastError,
        (value) => value !== undefined,
      );
      expect(error?.message).toMatch(/Connection is closed/);

      const frozen = new InstanceReporter({ limiter, client, instanceId: 'frozen' });
      await frozen.reportNow();
      server.process.kill('SIGSTOP');
      let started = performance.now();
      await expect(frozen.close()).resolves.toBeUndefined();
      const frozenMs = performance.now() - started;
      expect(frozenMs).toBeGreaterThanOrEqual(REPORT_DELETE_TIMEOUT_MS - 5);
      // It gave up on the frozen server when its timer fired (late, as a loaded host fires it), not at SIGCONT.
      expect(frozenMs).toBeLessThan(2 * REPORT_DELETE_TIMEOUT_MS);
      server.process.kill('SIGCONT');
      // The deletion was only delayed: Redis runs it once it resumes.
      await waitFor(
        () => client.exists(frozen.key),
        (exists) => exists === 0,
      );

      const down = new InstanceReporter({ limiter, client, instanceId: 'down' });
      await down.reportNow();
      await server.stop();
      await waitFor(
        () => client.status,
        (status) => status !== 'ready',
      );
      started = performance.now();
      await expect(down.close()).resolves.toBeUndefined();
      // Not waited for at all: well before the deletion's timeout would have ended a wait.
      expect(performance.now() - started).toBeLessThan(REPORT_DELETE_TIMEOUT_MS / 2);
      // The deletion waits in the client's queue and goes out when it reconnects.
      server = await startRedisServerOnPort(server.port);
      await waitFor(
        () => client.status,
        (status) => status === 'ready',
      );
      await waitFor(
        () => client.exists(down.key),
        (exists) => exists === 0,
      );
      expect(down.lastError).toBeUndefined();
    } finally {
      if (server.process.signalCode === 'SIGSTOP') server.process.kill('SIGCONT');
      // quit() on a ready client; disconnect() on a reconnecting one would leave ioredis' 2 s timer behind.
      if (client.status === 'ready') await client.quit();
      else client.disconnect();
      await server.stop();
    }
  });
});

describe('InstanceReporter.noteDecision (the reports while the first decisions flow)', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** A reporter on a client that records when each report was written (fake time, ms). */
  function recorded(intervalMs: number) {
    const writes: number[] = [];
    const client = {
      status: 'ready',
      set: () => {
        writes.push(Math.round(performance.now() - t0));
        return Promise.resolve('OK');
      },
      del: () => Promise.resolve(1),
    } as unknown as Redis;
    const limiter: ReportedLimiter = {
      keyPrefix: 'rl:',
      functionName: 'sliding_allow_v2',
      metrics: { snapshot: () => [] },
    };
    const t0 = performance.now();
    return { reporter: new InstanceReporter({ limiter, client, intervalMs, instanceId: 'fake' }), writes, t0 };
  }

  it('reports at most once a second from the first decision for one interval, then only on the interval', async () => {
    const { reporter, writes } = recorded(5000);
    reporter.noteDecision(); // before start(): nothing
    reporter.start();
    await jest.advanceTimersByTimeAsync(2000);
    // Decisions every 100 ms from t = 2 s to t = 12 s: the first one starts the one-interval warm-up.
    for (let t = 2000; t < 12_000; t += 100) {
      reporter.noteDecision();
      await jest.advanceTimersByTimeAsync(100);
    }
    // Start-up at 0; the interval at 5 s and 10 s; decisions at 2, 3, 4 and 6 s (5 s had just
    // reported); none from 7 s, one interval after the first decision.
    expect(writes).toEqual([0, 2000, 3000, 4000, 5000, 6000, 10_000]);
    await reporter.close();
    reporter.noteDecision(); // after close(): nothing
    await jest.advanceTimersByTimeAsync(6000);
    expect(writes).toHaveLength(7);
  });
});

describe('instance report keys and parsing', () => {
  const redis = useSharedClient();

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
