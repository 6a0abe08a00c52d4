/*
 * What an application sees when the limiter cannot start as configured, and that it is never quiet
 * about it: a Redis that is dead when the application starts (the first requests must not wait on
 * start-up; the health check says the limiter has not started; Redis decides as soon as it answers),
 * and `loadFunctions: 'off'` on a server without the functions (an error line naming the fix, the
 * health check down).
 */
import { TerminusModule } from '@nestjs/terminus';
import Redis from 'ioredis';
import { SlidingWindowLimiter } from '../../../lib';
import { MAX_RECONNECT_DELAY_MS } from '../../../lib/nest/rate-limit-connection';
import { HealthController } from '../../fixtures/health/health.controller';
import { LimitedController } from '../../fixtures/limits/limited.controller';
import { freePort } from '../../support/free-port';
import { startTestApp, useTestApps, type TestApp } from '../../support/nest-app';
import { startRedisServer, startRedisServerOnPort, type RedisServer } from '../../support/redis-server';
import { recordingLogger } from '../../support/recording-logger';
import { reconnectingClient } from '../../support/test-redis';
import { waitFor } from '../../support/wait-for';
import { SlidingLimitHealthIndicator } from 'nestjs-sliding-limit/health';

async function timed<T>(call: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await call();
  return { value, ms: performance.now() - started };
}

/**
 * The limiters' timeout here: what a decision would wait for start-up if it waited. Four times the
 * default, so that "answered at once" (well under it) and "waited for start-up" (about it) stay
 * apart on a loaded two-core host, where an HTTP answer alone can take a few hundred ms.
 */
const TIMEOUT_MS = 1000;
/** From Redis answering to its first decision: the module's reconnect delay, plus a loaded host's scheduling. */
const BACK_WITHIN_MS = MAX_RECONNECT_DELAY_MS + 1000;

describe('Redis dead when the application starts (the module opens the connection)', () => {
  const startApp = useTestApps();
  let late: RedisServer | undefined;
  afterEach(async () => {
    await late?.stop();
    late = undefined;
  });

  it('requests go to onRedisError at once (no wait on start-up), health says not started, and Redis decides within a second of answering', async () => {
    const port = await freePort(); // nothing listens there yet
    const logger = recordingLogger();
    const booting = timed(() =>
      startApp({
        platform: 'express',
        imports: [TerminusModule.forRoot({ logger: false })],
        controllers: [LimitedController, HealthController],
        providers: [SlidingLimitHealthIndicator],
        options: {
          redis: `redis://127.0.0.1:${port}`,
          functionName: 'sliding_allow_v2',
          timeoutMs: TIMEOUT_MS,
          report: false,
          logger,
        },
      }),
    );
    const app = (await booting).value;
    process.stdout.write(`start-up with Redis dead: app.init() took ${Math.round((await booting).ms)} ms\n`);
    expect(logger.warnings).toEqual([
      expect.stringMatching(
        /^Start-up did not finish \(.+\); decisions follow onRedisError until it does\. Retrying in the background every 1 s and whenever the connection is ready$/,
      ),
    ]);

    // The first requests: by onRedisError (allow), without waiting on start-up, and never quietly.
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      const { value: response, ms } = await timed(() => app.http().get('/limited'));
      expect(response.status).toBe(200);
      expect(response.headers['x-ratelimit-limit']).toBeUndefined();
      waits.push(ms);
    }
    process.stdout.write(
      `start-up with Redis dead: the first requests answered in ${waits.map(Math.round).join(', ')} ms\n`,
    );
    // Each at once: well under one timeoutMs (HTTP on a loaded two-core machine included).
    expect(Math.max(...waits)).toBeLessThan(TIMEOUT_MS);

    const limiter = app.app.get(SlidingWindowLimiter);
    expect(limiter.status()).toMatchObject({
      started: false,
      startup: { sinceMs: expect.any(Number), attempts: expect.any(Number), lastError: { kind: expect.any(String) } },
      degraded: { decisions: { allow: 4, deny: 0, insurance: 0 } },
    });
    const health = await app.http().get('/health');
    expect(health.status).toBe(503);
    expect(health.body.error.rateLimit).toMatchObject({
      status: 'down',
      startup: { since: expect.any(String), attempts: expect.any(Number), lastError: expect.any(String) },
      degraded: { decisions: 4, byKind: { allow: 4 } },
    });
    expect(health.body.error.rateLimit.message).toMatch(
      /^the limiter has not started: .+ \(retrying since \S+Z, \d+ attempts\); /,
    );

    // Redis starts: start-up finishes in the background, and Redis decides within a second.
    late = await startRedisServerOnPort(port);
    const answeringAt = performance.now();
    const decided = await waitFor(
      async () => (await app.http().get('/limited')).headers['x-ratelimit-limit'],
      (limit) => limit !== undefined,
      { timeoutMs: 5000, intervalMs: 10 },
    );
    const backMs = performance.now() - answeringAt;
    process.stdout.write(`start-up with Redis dead: Redis decided ${Math.round(backMs)} ms after it answered\n`);
    expect(decided).toBe('2');
    expect(backMs).toBeLessThan(BACK_WITHIN_MS);
    expect(limiter.status().started).toBe(true);
    expect(limiter.status().startup).toBeUndefined();
    expect(logger.logs).toContainEqual(
      expect.stringMatching(/^Start-up finished after \d+\.\d s and \d+ attempts; sliding_allow_v2 decides$/),
    );
  });
});

describe('a limiter used without init() while Redis is dead', () => {
  let late: RedisServer | undefined;
  let client: Redis | undefined;
  let limiter: SlidingWindowLimiter | undefined;
  afterEach(async () => {
    await limiter?.close();
    client?.disconnect();
    await late?.stop();
    late = client = limiter = undefined;
  });

  it('the first decision waits at most about timeoutMs for start-up, the next ones not at all; Redis decides once it answers', async () => {
    const port = await freePort();
    client = reconnectingClient(`redis://127.0.0.1:${port}`);
    const logger = recordingLogger();
    limiter = new SlidingWindowLimiter({ client, timeoutMs: TIMEOUT_MS, report: false, logger });
    const rule = { limit: 2, windowMs: 60_000 };

    const first = await timed(() => limiter!.consume('k', rule));
    expect(first.value.degraded).toBe('allow');
    expect(first.ms).toBeLessThan(1.25 * TIMEOUT_MS + 500);
    const next: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { value, ms } = await timed(() => limiter!.consume('k', rule));
      expect(value.degraded).toBe('allow');
      next.push(ms);
    }
    process.stdout.write(
      `without init(), Redis dead: first decision ${Math.round(first.ms)} ms, the next ${next.map((ms) => ms.toFixed(1)).join(', ')} ms\n`,
    );
    // Not at all: a small fraction of what waiting for start-up would take.
    expect(Math.max(...next)).toBeLessThan(TIMEOUT_MS / 4);
    expect(logger.warnings[0]).toMatch(/^Start-up did not finish /);

    late = await startRedisServerOnPort(port);
    const decided = await waitFor(
      () => limiter!.consume('k', rule),
      (decision) => decision.degraded === undefined,
      { timeoutMs: 5000, intervalMs: 10 },
    );
    expect(decided).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe("loadFunctions: 'off' on a server without the functions", () => {
  let server: RedisServer;
  let app: TestApp;
  const logger = recordingLogger();

  beforeAll(async () => {
    server = await startRedisServer();
    app = await startTestApp({
      platform: 'express',
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: [LimitedController, HealthController],
      providers: [SlidingLimitHealthIndicator],
      options: { redis: server.url, functionName: 'sliding_allow_v2', loadFunctions: 'off', report: false, logger },
    });
  });
  afterAll(async () => {
    await app?.close();
    await server?.stop();
  });

  it('every request passes by onRedisError, and it is loud: an error line naming the fix with --url, the health check down', async () => {
    const address = `127.0.0.1:${server.port}`;
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.http().get('/limited')).status);
    expect(statuses).toEqual([200, 200, 200, 200]);

    expect(logger.errors).toEqual([
      `Redis did not decide (function sliding_allow_v2 (library rate_limit_v2) is not loaded on ${address}; load it ` +
        `with: npx nestjs-sliding-limit functions load v2 --url redis://${address} (or redis-cli -u redis://${address} -x FUNCTION LOAD < ` +
        "node_modules/nestjs-sliding-limit/dist/redis/lua/rate_limit_v2.lua) (or use loadFunctions: 'auto')); " +
        'deciding by allow until it does. A summary follows every 10 s while this lasts.',
    ]);

    const health = await app.http().get('/health');
    expect(health.status).toBe(503);
    expect(health.body.error.rateLimit).toMatchObject({
      status: 'down',
      missing: [{ node: address, functionName: 'sliding_allow_v2', libraryName: 'rate_limit_v2' }],
      degraded: { decisions: 4, byKind: { allow: 4 } },
    });
    expect(health.body.error.rateLimit.message).toContain(
      `sliding_allow_v2 (library rate_limit_v2) is not loaded on ${address}; load it on each: ` +
        `npx nestjs-sliding-limit functions load v2 --url redis://${address}`,
    );
  });
});
