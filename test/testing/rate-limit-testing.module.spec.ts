import { Controller, Get, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type Redis from 'ioredis';
import { MemoryBackend, RateLimitConfigError, SlidingLimit, SlidingWindowLimiter } from 'nestjs-sliding-limit';
import { InCodeLimitController } from '../fixtures/limits/in-code-limit.controller';
import { AuthController, ItemsController, SmsController } from '../fixtures/limits/limits.controllers';
import { manualClock, PLATFORMS, startTestApp, type TestApp } from '../support/nest-app';
import { connectShared } from '../support/test-redis';
import { rejectionOf } from '../support/rejection';
import { DEFAULT_TEST_START_TIME, RateLimitTestingModule, TestClock } from 'nestjs-sliding-limit/testing';
import type { RateLimitModuleOptions } from 'nestjs-sliding-limit';

const START = DEFAULT_TEST_START_TIME;
const CONTROLLERS = [AuthController, SmsController, ItemsController, InCodeLimitController];

/** One step of a script played against both apps. */
type Step = { advance: number } | { method: 'get' | 'post'; path: string; body?: object };

/** What the two apps must agree on: status, body and every rate-limit header. */
function observable(res: { status: number; body: unknown; headers: Record<string, string | string[] | undefined> }) {
  const headers = Object.fromEntries(
    Object.entries(res.headers).filter(([name]) => /^(x-ratelimit-|ratelimit|retry-after$|content-type$)/.test(name)),
  );
  return { status: res.status, body: res.body, headers };
}

describe.each(PLATFORMS)('RateLimitTestingModule on %s', (platform) => {
  let apps: TestApp[] = [];
  let redis: Redis;
  beforeAll(() => {
    redis = connectShared();
  });
  afterAll(() => redis.quit());
  afterEach(async () => {
    await Promise.all(apps.map((app) => app.close()));
    apps = [];
  });

  /** The same controllers on Redis (clock moved by hand) and on RateLimitTestingModule. */
  async function startPair(options: Partial<RateLimitModuleOptions> = {}) {
    const clock = manualClock(START);
    const onRedis = await startTestApp({
      platform,
      controllers: CONTROLLERS,
      options: { ...options, clock: clock.now },
    });
    apps.push(onRedis);
    const inMemory = await startTestApp({
      platform,
      controllers: CONTROLLERS,
      rateLimitModule: RateLimitTestingModule.forRoot(options),
    });
    apps.push(inMemory);
    const testClock = inMemory.app.get(TestClock);
    return {
      onRedis,
      inMemory,
      testClock,
      advance(ms: number) {
        clock.advance(ms);
        testClock.advance(ms);
      },
    };
  }

  /** Plays `steps` on both apps, comparing every answer; returns the pair and the statuses seen. */
  async function play(steps: Step[], options?: Parameters<typeof startPair>[0]) {
    const pair = await startPair(options);
    const statuses: number[] = [];
    for (const [index, step] of steps.entries()) {
      if ('advance' in step) {
        pair.advance(step.advance);
        continue;
      }
      const send = (app: TestApp) =>
        app
          .http()
          [step.method](step.path)
          .send(step.body ?? {});
      const fromRedis = observable(await send(pair.onRedis));
      const inMemory = observable(await send(pair.inMemory));
      expect({ index, step, ...inMemory }).toEqual({ index, step, ...fromRedis });
      statuses.push(fromRedis.status);
    }
    return { ...pair, statuses };
  }

  it('answers like the Redis-backed app: statuses, bodies, X-RateLimit-*, Retry-After', async () => {
    const login = { method: 'post', path: '/auth/login' } as const;
    const sms = (phone: string) => ({ method: 'post', path: '/sms/code', body: { phone } }) as const;
    const item = { method: 'get', path: '/items/7' } as const;
    const inCode = { method: 'post', path: '/in-code' } as const;
    const { statuses } = await play([
      login,
      login,
      { advance: 1_500 },
      login,
      login,
      login,
      login,
      { advance: 20_250 },
      login,
      sms('1'),
      sms('1'),
      { advance: 59_999 },
      sms('1'),
      sms('2'),
      { advance: 1 },
      sms('1'),
      item,
      item,
      { advance: 61_000 },
      item,
      inCode,
      inCode,
      { advance: 30_000 },
      inCode,
      { advance: 40_000 },
      login,
      login,
      login,
      login,
      login,
      login,
    ]);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(6);
  });

  it('answers like the Redis-backed app with the IETF draft headers and problem bodies', async () => {
    const sms = (phone: string) => ({ method: 'post', path: '/sms/code', body: { phone } }) as const;
    const { statuses } = await play(
      [sms('9'), sms('9'), { advance: 45_000 }, sms('9'), { advance: 15_000 }, sms('9')],
      { headers: 'both', refusals: { body: 'problem' } },
    );
    expect(statuses).toEqual([201, 429, 429, 201]);
  });

  it('TestClock.advance frees a slot at the same millisecond as on Redis', async () => {
    const login = { method: 'post', path: '/auth/login' } as const;
    const steps: Step[] = [login, { advance: 10_000 }, login, login, login, login];
    const pair = await play([...steps, { advance: 49_999 }, login]); // 1 ms before the first entry leaves
    const statuses = async () => [
      (await pair.onRedis.http().post('/auth/login')).status,
      (await pair.inMemory.http().post('/auth/login')).status,
    ];
    expect(await statuses()).toEqual([429, 429]);
    pair.advance(1); // the first entry leaves the window now
    expect(await statuses()).toEqual([201, 201]);
    expect(await statuses()).toEqual([429, 429]);
    expect(pair.testClock.now()).toBe(START + 60_000);
  });

  it('exposes the keys it holds, named like the Redis keys, each with a TTL', async () => {
    const pair = await play([
      { method: 'post', path: '/auth/login' },
      { method: 'post', path: '/sms/code', body: { phone: '138{x}' } },
    ]);
    const memory = pair.inMemory.app.get(MemoryBackend);
    const redisKeys = (await redis.keys(`${pair.onRedis.keyPrefix}*`)).filter((key) => !key.includes('__nsl:'));
    expect(memory.keys()).toEqual(redisKeys.map((key) => `rl:${key.slice(pair.onRedis.keyPrefix.length)}`).sort());
    expect(memory.keys()).toContain('rl:sms-minute:{body.phone:138%7Bx%7D}');
    for (const key of memory.keys()) {
      expect(memory.entries(key)).toEqual([{ member: expect.any(String), score: START }]);
      expect(memory.pttl(key)).toBeGreaterThan(0);
    }
    pair.testClock.advance(24 * 60 * 60_000);
    expect(memory.keys()).toEqual(['rl:sms-day:{body.phone:138%7Bx%7D}']); // expires once its TTL has passed (Redis: now > expiry)
    pair.testClock.advance(1);
    expect(memory.keys()).toEqual([]);
  });

  it('gives every forRoot() its own store and clock, and lets providers inject the clock', async () => {
    @Injectable()
    class Stamp {
      constructor(readonly clock: TestClock) {}
    }
    @Controller('stamp')
    class StampController {
      constructor(private readonly stamp: Stamp) {}
      @Get()
      @SlidingLimit({ name: 'stamp', limit: 1, windowMs: 1000 })
      now(): { now: number } {
        return { now: this.stamp.clock.now() };
      }
    }
    const first = await startTestApp({
      platform,
      controllers: [StampController],
      providers: [Stamp],
      rateLimitModule: RateLimitTestingModule.forRoot({ startTime: 5_000 }),
    });
    apps.push(first);
    const second = await startTestApp({
      platform,
      controllers: [StampController],
      providers: [Stamp],
      rateLimitModule: RateLimitTestingModule.forRoot(),
    });
    apps.push(second);

    expect((await first.http().get('/stamp').expect(200)).body).toEqual({ now: 5_000 });
    await first.http().get('/stamp').expect(429);
    expect((await second.http().get('/stamp').expect(200)).body).toEqual({ now: START });
    first.app.get(TestClock).advance(1000);
    await first.http().get('/stamp').expect(200);
    expect(second.app.get(TestClock).now()).toBe(START);
    expect(first.app.get(SlidingWindowLimiter).mode).toBe('memory');
  });
});

describe('RateLimitTestingModule and TestClock arguments', () => {
  it('rejects a bad start time, a backwards advance and a non-finite time', () => {
    expect(() => RateLimitTestingModule.forRoot({ startTime: Number.NaN })).toThrow(RateLimitConfigError);
    const clock = new TestClock(0);
    expect(() => clock.advance(-1)).toThrow(/use set\(\) to go back/);
    expect(() => clock.set(Infinity)).toThrow(/finite number/);
    clock.set(-5);
    expect(clock.advance(10)).toBe(5);
  });

  it('validates the module options like RateLimitModule, and refuses a connection of its own', async () => {
    const error = await rejectionOf(
      Test.createTestingModule({
        imports: [RateLimitTestingModule.forRoot({ headers: 'fancy' as never, redis: 'redis://127.0.0.1:1' } as never)],
      }).compile(),
    );
    expect(error).toBeInstanceOf(RateLimitConfigError);
    const problems = (error as RateLimitConfigError).problems.join('\n');
    expect(problems).toContain('headers must be one of');
    expect(problems).toContain('set only one of redis, client, backend and store');
  });
});
