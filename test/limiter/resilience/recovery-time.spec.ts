/*
 * How soon limits come back once Redis answers again (issue 16, item 6), through the connection
 * RateLimitModule opens from its `redis` option: each test runs the module on a redis-server of this
 * file's own, under traffic, and measures from the moment Redis answers again to the first decision
 * Redis makes (not one made by onRedisError).
 *
 * - Stopped and restarted empty on the same port (data and functions gone: the first call reloads
 *   them), after outages of 1 s and 10 s, and of 60 s: that one is not waited out. The only state
 *   that grows with an outage is the client's count of reconnect attempts, which sets its next delay
 *   (ioredis' retryStrategy(attempt)); nothing else does (the breaker re-opens for the same cool-down
 *   at every probe). So the test stops a real redis-server, sets that count to what 60 s of refused
 *   connections leave (computed from the client's own retryStrategy, the way ioredis counts), lets
 *   the client retry at that back-off for real, and restarts the server. The 10 s outage checks the
 *   model: the count it reaches for real is close to the computed one.
 * - Frozen (kill -STOP, socket left open) for 2 s, then kill -CONT: the breaker's state does not grow
 *   with a longer freeze (one probe per cool-down), so 2 s stands for any length.
 *
 * A failover is measured in failover-recovery.spec.ts (it needs a cluster).
 */
import { Test, type TestingModule } from '@nestjs/testing';
import Redis from 'ioredis';
import { RateLimitModule, SlidingWindowLimiter, type RateLimitModuleOptions } from '../../../lib';
import { RATE_LIMIT_CONNECTION } from '../../../lib/nest/rate-limit.constants';
import {
  closeRateLimitConnection,
  createRateLimitConnection,
  MAX_RECONNECT_DELAY_MS,
  type RateLimitConnection,
} from '../../../lib/nest/rate-limit-connection';
import { resolveRateLimitOptions } from '../../../lib/nest/rate-limit.options';
import { RedisServer, startRedisServer, startRedisServerOnPort } from '../../support/redis-server';
import { librarySource } from '../../support/lua-functions';
import { listLibraries } from '../../support/redis-inspect';
import { recordingLogger } from '../../support/recording-logger';
import { sleep } from '../../support/sleep';
import { startTraffic } from '../../support/traffic';
import { waitFor, waitUntil } from '../../support/wait-for';

/**
 * From Redis answering again to the first decision it makes. The module's reconnect delay is at most
 * 500 ms; the rest is the reconnect itself, the ready check, the functions reloaded on the emptied
 * server and a loaded two-core host's scheduling (a second: with two CPU-bound processes beside the
 * suite, timers and replies come that late).
 */
const RECOVERY_BOUND_MS = MAX_RECONNECT_DELAY_MS + 1000;

const silent = { log: () => undefined, warn: () => undefined };

const keys = Array.from({ length: 16 }, (_, i) => `recovery:${i}`);

/** The module on `url`, started as an application starts it (init() loads or verifies the functions). */
async function startModule(
  url: string,
  options: Partial<RateLimitModuleOptions> = {},
): Promise<{ moduleRef: TestingModule; limiter: SlidingWindowLimiter; client: Redis }> {
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot({ redis: url, keyPrefix: 'rl:', logger: silent, report: false, ...options })],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  const connection = moduleRef.get<RateLimitConnection>(RATE_LIMIT_CONNECTION);
  return { moduleRef, limiter: moduleRef.get(SlidingWindowLimiter), client: connection.client as Redis };
}

/** Reconnect attempts ioredis counts after `outageMs` of refused connections, per its retryStrategy. */
function attemptsAfter(outageMs: number, retryStrategy: (attempt: number) => unknown): number {
  let attempts = 0;
  for (let elapsed = 0; elapsed < outageMs;) elapsed += Number(retryStrategy(++attempts));
  return attempts;
}

describe("the module's reconnect strategy", () => {
  it('waits at most 500 ms between attempts, however many there were; a retryStrategy of the user wins', async () => {
    const own = createRateLimitConnection(resolveRateLimitOptions({ redis: 'redis://127.0.0.1:6379' }));
    const strategy = (own.client as Redis).options.retryStrategy as (attempt: number) => number;
    const delays = Array.from({ length: 10_000 }, (_, i) => strategy(i + 1));
    expect(Math.max(...delays)).toBeLessThan(MAX_RECONNECT_DELAY_MS);
    expect(strategy(1)).toBeLessThan(150); // the first attempts come quickly
    const users = () => 2000;
    const theirs = createRateLimitConnection(
      resolveRateLimitOptions({ redis: { host: '127.0.0.1', retryStrategy: users } }),
    );
    expect((theirs.client as Redis).options.retryStrategy).toBe(users);
    await Promise.all([closeRateLimitConnection(own), closeRateLimitConnection(theirs)]);
  });
});

describe('recovery after Redis stops and restarts, on the connection the module opens', () => {
  let server: RedisServer | undefined;
  let moduleRef: TestingModule | undefined;
  afterEach(async () => {
    await moduleRef?.close();
    await server?.stop();
    moduleRef = server = undefined;
  });

  it.each([
    ['1 s', 1000, false],
    ['10 s', 10_000, false],
    ['60 s (the back-off 60 s leave)', 60_000, true],
  ])(
    'outage of %s: Redis decides again within a second of answering, and every call after that is its decision',
    async (label, outageMs, simulated) => {
      server = await startRedisServer();
      const port = server.port;
      const started = await startModule(server.url);
      moduleRef = started.moduleRef;
      const { limiter, client } = started;
      const readyAt: number[] = [];
      client.on('ready', () => readyAt.push(performance.now()));
      const retryStrategy = client.options.retryStrategy as (attempt: number) => unknown;
      const traffic = startTraffic(limiter, keys, { concurrency: 4, pauseMs: 2, now: () => performance.now() });

      await traffic.moreCalls(20);
      const stoppedAt = performance.now();
      await server.stop();
      if (simulated) {
        await waitFor(
          () => client.status,
          (status) => status === 'reconnecting',
        );
        const attempts = client as unknown as { retryAttempts: number };
        attempts.retryAttempts = attemptsAfter(outageMs, retryStrategy);
        // A few real attempts at that back-off.
        const target = attempts.retryAttempts + 3;
        await waitUntil(() => attempts.retryAttempts >= target, { timeoutMs: 10_000 });
      } else {
        await sleep(outageMs - (performance.now() - stoppedAt));
      }
      const attemptsAtRestart = (client as unknown as { retryAttempts: number }).retryAttempts;
      const spawnedAt = performance.now();
      server = await startRedisServerOnPort(port);
      const answeringAt = performance.now();
      const { firstDecidedAt, calls, degraded } = await traffic.stopAfterFirstDecision(spawnedAt, {
        timeoutMs: 15_000,
        settleMs: 300,
      });
      const ready = readyAt.find((at) => at > spawnedAt) ?? NaN;
      process.stdout.write(
        `recovery, outage ${label}: Redis answering ${ms(answeringAt - spawnedAt)} after its restart; ` +
          `the client ready ${ms(ready - answeringAt)} after that (${attemptsAtRestart} reconnect attempts` +
          `${simulated ? `, ${attemptsAfter(outageMs, retryStrategy)} set as 60 s leave them` : `, ${attemptsAfter(outageMs, retryStrategy)} by the model`}` +
          `; delay now ${String(retryStrategy(attemptsAtRestart + 1))} ms); ` +
          `first decision by Redis ${ms(firstDecidedAt - answeringAt)} after it answered ` +
          `(${ms(firstDecidedAt - spawnedAt)} after the restart began); ${degraded.length} degraded calls\n`,
      );

      expect(calls.filter((call) => call.error !== undefined)).toEqual([]);
      expect(calls.filter((call) => call.degraded === undefined && call.endedAt < stoppedAt).length).toBeGreaterThan(0);
      expect(degraded.length).toBeGreaterThan(0);
      // From Redis answering: the server's own start-up is not the limiter's (on this shared host it
      // once took 1.2 s). `answeringAt` is when the restart's PING poll (every 25 ms) saw PONG, so it
      // can be up to that much after the server really began to answer.
      expect(firstDecidedAt - answeringAt).toBeLessThan(RECOVERY_BOUND_MS);
      // The limiter stops failing open as soon as the connection is ready: nothing after is degraded.
      expect(degraded.filter((call) => call.startedAt > firstDecidedAt)).toEqual([]);
      if (!simulated && outageMs >= 10_000) {
        // The model of the 60 s case: the attempts a real outage made are those retryStrategy predicts
        // (fewer by the time each refused connection takes).
        const predicted = attemptsAfter(outageMs, retryStrategy);
        expect(attemptsAtRestart).toBeGreaterThan(predicted * 0.8);
        expect(attemptsAtRestart).toBeLessThanOrEqual(predicted + 1);
      }
    },
  );

  it("under loadFunctions: 'verify', restarted empty: the verified library is reloaded by itself: Redis decides again within a second, and the reload is logged", async () => {
    server = await startRedisServer();
    const port = server.port;
    // What 'verify' expects: an operator loaded the library before the application started.
    const admin = new Redis(server.url);
    await admin.call('FUNCTION', 'LOAD', librarySource('v2'));
    admin.disconnect();
    const logged = recordingLogger();
    const started = await startModule(server.url, {
      functionName: 'sliding_allow_v2',
      loadFunctions: 'verify',
      logger: logged,
    });
    moduleRef = started.moduleRef;
    const traffic = startTraffic(started.limiter, keys, { concurrency: 4, pauseMs: 2, now: () => performance.now() });

    await traffic.moreCalls(20);
    const stoppedAt = performance.now();
    await server.stop();
    await sleep(1000 - (performance.now() - stoppedAt));
    const spawnedAt = performance.now();
    server = await startRedisServerOnPort(port);
    const answeringAt = performance.now();
    const { firstDecidedAt, calls, degraded } = await traffic.stopAfterFirstDecision(spawnedAt, {
      timeoutMs: 10_000,
      settleMs: 300,
    });
    process.stdout.write(
      `recovery, loadFunctions 'verify', restarted empty after 1 s: first decision by Redis ` +
        `${ms(firstDecidedAt - answeringAt)} after it answered; ${degraded.length} degraded calls\n`,
    );

    expect(calls.filter((call) => call.error !== undefined)).toEqual([]);
    expect(calls.filter((call) => call.degraded === undefined && call.endedAt < stoppedAt).length).toBeGreaterThan(0);
    expect(firstDecidedAt - answeringAt).toBeLessThan(RECOVERY_BOUND_MS);
    expect(degraded.filter((call) => call.startedAt > firstDecidedAt)).toEqual([]);
    // The library verified at start-up, as bundled, and nothing else.
    const check = new Redis(server.url, { protocol: 2 });
    try {
      expect(await listLibraries(check)).toEqual([
        expect.objectContaining({ name: 'rate_limit_v2', code: librarySource('v2') }),
      ]);
    } finally {
      check.disconnect();
    }
    expect(logged.warnings.filter((line) => line.includes('reloaded'))).toEqual([
      expect.stringContaining(`loadFunctions is 'verify'`),
    ]);
  });
});

describe('recovery after Redis is frozen (SIGSTOP) and resumes, on the connection the module opens', () => {
  let server: RedisServer | undefined;
  let moduleRef: TestingModule | undefined;
  afterEach(async () => {
    if (server?.process.signalCode === null) server.process.kill('SIGCONT');
    await moduleRef?.close();
    await server?.stop();
    moduleRef = server = undefined;
  });

  it('Redis decides again within a second of SIGCONT, and every call after that is its decision', async () => {
    server = await startRedisServer();
    const started = await startModule(server.url);
    moduleRef = started.moduleRef;
    const traffic = startTraffic(started.limiter, keys, { concurrency: 4, pauseMs: 2, now: () => performance.now() });

    await traffic.moreCalls(20);
    server.process.kill('SIGSTOP');
    await sleep(2000);
    const resumedAt = performance.now();
    server.process.kill('SIGCONT');
    const { firstDecidedAt, calls, degraded } = await traffic.stopAfterFirstDecision(resumedAt, {
      timeoutMs: 10_000,
      settleMs: 300,
    });
    process.stdout.write(
      `recovery, frozen 2 s: first decision by Redis ${ms(firstDecidedAt - resumedAt)} after SIGCONT; ` +
        `${degraded.length} degraded calls\n`,
    );
    expect(calls.filter((call) => call.error !== undefined)).toEqual([]);
    expect(degraded.length).toBeGreaterThan(0);
    expect(firstDecidedAt - resumedAt).toBeLessThan(RECOVERY_BOUND_MS);
    expect(degraded.filter((call) => call.startedAt > firstDecidedAt)).toEqual([]);
  });
});

function ms(value: number): string {
  return `${Math.round(value)} ms`;
}
