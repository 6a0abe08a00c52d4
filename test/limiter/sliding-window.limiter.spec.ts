import type Redis from 'ioredis';
import {
  ClockSkewError,
  DEFAULT_FUNCTION_NAME,
  MemoryBackend,
  RateLimitConfigError,
  SlidingWindowLimiter,
} from '../../lib';
import { MemberIdSource } from '../../lib/limiter/member-ids';
import { onClientReady } from '../../lib/redis/ready-listeners';
import { sleep } from '../support/sleep';
import { testLimiter, useTestLimiters } from '../support/test-limiter';
import { connectShared, uniquePrefix, useSharedClient } from '../support/test-redis';
import { KNOWN_FUNCTION_NAMES } from '../../lib/redis/function-versions';

/** A clock the test moves by hand. */
function manualClock(start = 1_735_660_800_000) {
  let now = start;
  return { now: () => now, set: (ms: number) => (now = ms), advance: (ms: number) => (now += ms) };
}

describe('SlidingWindowLimiter', () => {
  const redis = useSharedClient();
  let keyPrefix: string;
  beforeEach(() => {
    keyPrefix = uniquePrefix('limiter');
  });
  const limiterWith = useTestLimiters(() => ({ client: redis, keyPrefix }));

  describe.each([
    ['sliding_allow_v1', 'function'],
    ['sliding_allow_v2', 'function'],
    ['sliding_allow_v1', 'script'],
    ['sliding_allow_v2', 'script'],
  ] as const)('%s in %s mode', (functionName, mode) => {
    const rule = { limit: 3, windowMs: 10_000 };

    it('admits the limit, then rejects with a retry-after at which a request is admitted again', async () => {
      const clock = manualClock();
      const limiter = limiterWith({ functionName, mode, clock: clock.now });
      const decisions = [];
      for (let i = 0; i < 4; i++) {
        decisions.push(await limiter.consume('user:1', rule));
        clock.advance(1000);
      }
      expect(limiter.mode).toBe(mode);
      expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ]);
      expect(decisions.every((d) => d.limit === 3 && d.functionName === functionName)).toBe(true);
      expect(decisions.slice(0, 3).every((d) => d.retryAfterMs === 0)).toBe(true);

      const rejectedAt = clock.now() - 1000;
      const { retryAfterMs } = decisions[3];
      // The oldest entry (rejectedAt - 3000) leaves the window 7 s after the rejection.
      expect(retryAfterMs).toBeGreaterThanOrEqual(7000);
      expect(retryAfterMs).toBeLessThanOrEqual(rule.windowMs);
      clock.set(rejectedAt + retryAfterMs);
      expect((await limiter.consume('user:1', rule)).allowed).toBe(true);
      expect(await redis.zcard(`${keyPrefix}user:1`)).toBeLessThanOrEqual(rule.limit);
    });

    it('admits exactly the limit from a same-millisecond burst', async () => {
      const limiter = limiterWith({ functionName, mode, clock: () => 1_735_660_800_000 });
      const decisions = await Promise.all(
        Array.from({ length: 50 }, () => limiter.consume('burst', { limit: 20, windowMs: 60_000 })),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(20);
      expect(await redis.zcard(`${keyPrefix}burst`)).toBe(20);
    });

    it('peeks without recording', async () => {
      const clock = manualClock();
      const limiter = limiterWith({ functionName, mode, clock: clock.now });
      await limiter.consume('p', rule);
      const state = await limiter.peek('p', rule);
      expect(state).toMatchObject({ allowed: true, count: 1, remaining: 2, retryAfterMs: 0, functionName });
      await limiter.consume('p', rule);
      await limiter.consume('p', rule);
      const full = await limiter.peek('p', rule);
      expect(full).toMatchObject({ allowed: false, count: 3, remaining: 0 });
      expect(full.retryAfterMs).toBeGreaterThan(0);
      expect(await redis.zcard(`${keyPrefix}p`)).toBe(3);
    });

    it('stacked limits: a request rejected by one limit is recorded in none', async () => {
      const clock = manualClock();
      const limiter = limiterWith({ functionName, mode, clock: clock.now });
      const limits = [
        { key: 'sms:minute', limit: 1, windowMs: 60_000 },
        { key: 'sms:day', limit: 10, windowMs: 86_400_000 },
      ];
      expect((await limiter.consumeAll(limits)).allowed).toBe(true);
      clock.advance(1000);
      const rejected = await limiter.consumeAll(limits);
      expect(rejected.allowed).toBe(false);
      expect(rejected.limits.map((d) => [d.allowed, d.remaining])).toEqual([
        [false, 0],
        [true, 9],
      ]);
      expect(rejected.retryAfterMs).toBeGreaterThanOrEqual(59_000);
      expect(await redis.zcard(`${keyPrefix}sms:day`)).toBe(1);
    });

    it('reset gives the full limit back', async () => {
      const limiter = limiterWith({ functionName, mode });
      for (let i = 0; i < 3; i++) await limiter.consume('r', rule);
      expect((await limiter.consume('r', rule)).allowed).toBe(false);
      await limiter.reset('r');
      expect((await limiter.consume('r', rule)).remaining).toBe(2);
    });

    it("takes the server's clock when clock is 'server'", async () => {
      // The local clock is moved far away (2001-09-09), so a limiter that read it would record that time.
      const localNow = 1_000_000_000_000;
      const spy = jest.spyOn(Date, 'now').mockReturnValue(localNow);
      try {
        const limiter = limiterWith({ functionName, mode, clock: 'server' });
        await limiter.consume('srv', rule);
      } finally {
        spy.mockRestore();
      }
      const [, score] = await redis.zrange(`${keyPrefix}srv`, 0, '0', 'WITHSCORES');
      const [seconds] = await redis.time();
      expect(Math.abs(Number(score) - localNow)).toBeGreaterThan(86_400_000);
      expect(Math.abs(Number(score) - Number(seconds) * 1000)).toBeLessThan(2000);
    });
  });

  it('v2 reports the exact retry-after: one ms earlier is still rejected', async () => {
    const clock = manualClock();
    const limiter = limiterWith({ functionName: 'sliding_allow_v2', clock: clock.now });
    const rule = { limit: 2, windowMs: 5000 };
    await limiter.consume('exact', rule);
    clock.advance(1234);
    await limiter.consume('exact', rule);
    const rejected = await limiter.consume('exact', rule);
    expect(rejected).toMatchObject({ allowed: false, retryAfterMs: 5000 - 1234, resetMs: 5000 });
    clock.advance(rejected.retryAfterMs - 1);
    expect((await limiter.consume('exact', rule)).allowed).toBe(false);
    clock.advance(1);
    expect((await limiter.consume('exact', rule)).allowed).toBe(true);
  });

  it("switching functionName v1 → v2 → v1 keeps each key's history", async () => {
    const clock = manualClock();
    const rule = { limit: 4, windowMs: 60_000 };
    const v1 = limiterWith({ functionName: 'sliding_allow_v1', clock: clock.now });
    const v2 = limiterWith({ functionName: 'sliding_allow_v2', clock: clock.now });
    const sequence = [v1, v1, v2, v1, v2, v1];
    const allowed = [];
    for (const limiter of sequence) {
      allowed.push((await limiter.consume('switch', rule)).allowed);
      clock.advance(10);
    }
    expect(allowed).toEqual([true, true, true, true, false, false]);
  });

  it('v2 refuses a clock lagging behind the newest entry with a ClockSkewError and records nothing', async () => {
    const clock = manualClock();
    const limiter = limiterWith({
      functionName: 'sliding_allow_v2',
      clock: clock.now,
      maxClockSkewMs: 500,
      onRedisError: 'throw',
    });
    const rule = { limit: 5, windowMs: 60_000 };
    await limiter.consume('skew', rule);
    clock.advance(-501);
    await expect(limiter.consume('skew', rule)).rejects.toThrow(ClockSkewError);
    await expect(limiter.consume('skew', rule)).rejects.toThrow(/501 ms behind the newest entry .*tolerance 500 ms/);
    expect(await redis.zcard(`${keyPrefix}skew`)).toBe(1);
  });

  it("detects Redis Functions in 'auto' mode", async () => {
    const limiter = limiterWith();
    await limiter.init();
    expect(limiter.mode).toBe('function');
    expect(limiter.functionName).toBe(DEFAULT_FUNCTION_NAME);
  });

  it('shares one ready listener among the limiters of a client, and leaves none once they close', async () => {
    const client = connectShared({ lazyConnect: true });
    try {
      const before = client.listenerCount('ready');
      // More than Node's 10 listeners per event, which used to print a leak warning.
      const limiters = Array.from({ length: 12 }, () => testLimiter({ client, keyPrefix }));
      expect(client.listenerCount('ready')).toBe(before + 1);
      // The condition Node's MaxListenersExceededWarning checks. Jest gives each test file its own
      // `process`, so listening for the warning itself could never catch it.
      expect(client.listenerCount('ready')).toBeLessThanOrEqual(client.getMaxListeners());
      const decisions = await Promise.all(
        limiters.map((limiter) => limiter.consume('shared', { limit: 20, windowMs: 10_000 })),
      );
      expect(decisions.map((decision) => decision.remaining)).toEqual(Array.from({ length: 12 }, (_, i) => 19 - i));
      for (const limiter of limiters) limiter.close();
      expect(client.listenerCount('ready')).toBe(before);
    } finally {
      await client.quit();
    }
  });

  it('runs every callback registered on a client when it becomes ready, until each is stopped', async () => {
    const client = connectShared({ lazyConnect: true });
    try {
      let runs = 0;
      const count = () => runs++;
      const stops = [onClientReady(client, count), onClientReady(client, count)];
      await client.connect();
      expect(runs).toBe(2);
      stops[0]();
      stops[0](); // stopping twice changes nothing
      client.emit('ready');
      expect(runs).toBe(3);
      stops[1]();
      client.emit('ready');
      expect(runs).toBe(3);
    } finally {
      await client.quit();
    }
  });

  it('counts the wait for start-up in the latency of the decisions that waited for it', async () => {
    const START_UP_MS = 150;
    /** A store whose functions take START_UP_MS to become callable, as a slow FUNCTION LOAD would. */
    class SlowToStart extends MemoryBackend {
      override async runnerFor(...args: Parameters<MemoryBackend['runnerFor']>) {
        await sleep(START_UP_MS);
        return super.runnerFor(...args);
      }
    }
    const limiter = testLimiter({ backend: new SlowToStart() });
    // No init(): the first decisions start the limiter up and wait for it.
    const decisions = await Promise.all([
      limiter.consume('a', { limit: 1, windowMs: 1000 }),
      limiter.consume('b', { limit: 1, windowMs: 1000 }),
    ]);
    expect(decisions.map((decision) => decision.allowed)).toEqual([true, true]);
    const [metrics] = limiter.metrics.snapshot();
    expect(metrics.latencyMs.count).toBe(2);
    // p50 is the lower of the two, to within a histogram bucket (19 %). Measured from the end of
    // start-up instead, each would be a fraction of a millisecond.
    expect(metrics.latencyMs.p50).toBeGreaterThanOrEqual(START_UP_MS - 5);
    limiter.close();
  });

  describe('configuration errors', () => {
    it('rejects an unknown function name at construction, listing the known versions', () => {
      expect(() => limiterWith({ functionName: 'sliding_allow_v9' })).toThrow(RateLimitConfigError);
      expect(() => limiterWith({ functionName: 'sliding_allow_v9' })).toThrow(
        new RegExp(
          `functionName "sliding_allow_v9" is not a shipped function; known: ${KNOWN_FUNCTION_NAMES.join(', ')}`,
        ),
      );
    });

    it('lists every bad option at once', () => {
      let error: RateLimitConfigError | undefined;
      try {
        new SlidingWindowLimiter({
          client: {} as Redis,
          keyPrefix: 'x'.repeat(200),
          loadFunctions: 'sometimes' as 'auto',
          mode: 'lua' as 'auto',
          clock: 'atomic' as 'local',
          maxClockSkewMs: -1,
        });
      } catch (caught) {
        error = caught as RateLimitConfigError;
      }
      expect(error).toBeInstanceOf(RateLimitConfigError);
      expect(error?.problems.map((p) => p.split(' ')[0])).toEqual([
        'client',
        'keyPrefix',
        'loadFunctions',
        'mode',
        'clock',
        'maxClockSkewMs',
      ]);
    });

    it.each([
      [{ limit: 0, windowMs: 1000 }, /rule.limit must be a whole number/],
      [{ limit: 1.5, windowMs: 1000 }, /rule.limit must be a whole number .* got 1.5/],
      [{ limit: Number.NaN, windowMs: 1000 }, /got NaN/],
      [{ limit: 5, windowMs: 0 }, /rule.windowMs must be/],
      [{ limit: '5', windowMs: 1000 }, /got "5"/],
    ])('rejects the rule %j before calling Redis', async (rule, message) => {
      const limiter = limiterWith();
      await expect(limiter.consume('bad', rule as never)).rejects.toThrow(message);
      expect(await redis.exists(`${keyPrefix}bad`)).toBe(0);
    });

    it('rejects an empty key and stacked limits sharing a key', async () => {
      const limiter = limiterWith();
      await expect(limiter.consume('', { limit: 1, windowMs: 1000 })).rejects.toThrow(
        /key 0 must be a non-empty string/,
      );
      await expect(
        limiter.consumeAll([
          { key: 'a', limit: 1, windowMs: 1000 },
          { key: 'a', limit: 5, windowMs: 60_000 },
        ]),
      ).rejects.toThrow(/each stacked limit needs its own key/);
    });
  });

  describe('request ids', () => {
    it('are unique and short, so a key stays in the compact listpack encoding', () => {
      const ids = new MemberIdSource();
      const seen = new Set<string>();
      for (let i = 0; i < 100_000; i++) seen.add(ids.next());
      expect(seen.size).toBe(100_000);
      expect(Math.max(...[...seen].map((id) => id.length))).toBeLessThanOrEqual(12);
      expect(new MemberIdSource().next()).not.toBe(new MemberIdSource().next());
    });
  });
});
