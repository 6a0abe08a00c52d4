/*
 * The limiter must work with whatever ioredis client the application passes: ioredis 6 and 5,
 * RESP2 and RESP3, both RESP3 reply mappings, and stringNumbers. Each configuration goes through
 * every place the package parses a reply: INFO (mode detection; Redis or Valkey), FUNCTION STATS,
 * FUNCTION LIST WITHCODE (loading and the code check), the function replies (consume, consumeAll,
 * peek), ZCOUNT (v1 peek) and TIME (v1 with the server clock).
 *
 * The loading checks flush functions, so they run on a redis-server of this file's own; the rest
 * runs on the shared server under a unique key prefix.
 */
import Redis6 from 'ioredis';
import Redis5 from 'ioredis5';
import { FunctionCodeMismatchError, type SlidingWindowLimiterOptions } from '../../lib';
import { librarySource } from '../support/lua-functions';
import { commandStats, listLibraries } from '../support/redis-inspect';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { useTestLimiters } from '../support/test-limiter';
import { connectShared, sharedRedisUrl, uniquePrefix } from '../support/test-redis';
import { testServerIdentity } from '../support/test-server';
import { functionsUnavailableOn } from '../../lib/redis/function-support';
import { readServerInfo } from '../../lib/redis/server-info';
import { RedisConnection } from '../../lib/core/redis-connection';

const BUNDLED = { v1: librarySource('v1'), v2: librarySource('v2') };

interface ClientConfig {
  name: string;
  /** RESP version the connection must end up speaking. */
  resp: 2 | 3;
  /** How a RESP3 map (CONFIG GET) reaches the caller. */
  maps: 'flat array' | 'object';
  stringNumbers: boolean;
  connect(url: string): RedisConnection;
}

const ioredis6 = (options: Record<string, unknown>) => (url: string) => new Redis6(url, options);
// ioredis 5 has its own (structurally different) types; the limiter accepts it at run time.
const ioredis5 = (options: Record<string, unknown>) => (url: string) =>
  new Redis5(url, options) as unknown as RedisConnection;

const CONFIGS: ClientConfig[] = [
  {
    name: 'ioredis 6, protocol 2',
    resp: 2,
    maps: 'flat array',
    stringNumbers: false,
    connect: ioredis6({ protocol: 2 }),
  },
  {
    name: "ioredis 6, protocol 3, replyMapping 'legacy' (default)",
    resp: 3,
    maps: 'flat array',
    stringNumbers: false,
    connect: ioredis6({ protocol: 3 }),
  },
  {
    name: "ioredis 6, protocol 3, replyMapping 'resp3'",
    resp: 3,
    maps: 'object',
    stringNumbers: false,
    connect: ioredis6({ protocol: 3, replyMapping: 'resp3' }),
  },
  {
    name: 'ioredis 6, protocol 2, stringNumbers',
    resp: 2,
    maps: 'flat array',
    stringNumbers: true,
    connect: ioredis6({ protocol: 2, stringNumbers: true }),
  },
  {
    name: 'ioredis 6, protocol 3, stringNumbers',
    resp: 3,
    maps: 'flat array',
    stringNumbers: true,
    connect: ioredis6({ protocol: 3, stringNumbers: true }),
  },
  {
    name: "ioredis 6, protocol 3, replyMapping 'resp3', stringNumbers",
    resp: 3,
    maps: 'object',
    stringNumbers: true,
    connect: ioredis6({ protocol: 3, replyMapping: 'resp3', stringNumbers: true }),
  },
  { name: 'ioredis 5', resp: 2, maps: 'flat array', stringNumbers: false, connect: ioredis5({}) },
  {
    name: 'ioredis 5, stringNumbers',
    resp: 2,
    maps: 'flat array',
    stringNumbers: true,
    connect: ioredis5({ stringNumbers: true }),
  },
];

/** A copy of the bundled v2 that differs by one space in a comment: still valid, still "other code". */
const ALMOST_V2 = BUNDLED.v2.replace('Reply (integers):', 'Reply (integers) :');

/** Epoch ms of the server clock, read through a plain RESP2 client. */
async function serverNowMs(admin: Redis6): Promise<number> {
  const [seconds, micros] = await admin.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

describe('client compatibility', () => {
  let ownServer: RedisServer;
  let ownAdmin: Redis6;
  let sharedAdmin: Redis6;

  beforeAll(async () => {
    ownServer = await startRedisServer();
    ownAdmin = new Redis6(ownServer.url, { protocol: 2 });
    sharedAdmin = connectShared({ protocol: 2 });
  });

  afterAll(async () => {
    await sharedAdmin?.quit();
    await ownAdmin?.quit();
    await ownServer?.stop();
  });

  describe.each(CONFIGS)('$name', (config) => {
    let shared: RedisConnection;
    let own: RedisConnection;
    let keyPrefix: string;

    beforeAll(() => {
      shared = config.connect(sharedRedisUrl());
      own = config.connect(ownServer.url);
    });

    afterAll(async () => {
      await Promise.all([shared?.quit(), own?.quit()]);
    });

    beforeEach(() => {
      keyPrefix = uniquePrefix('compat');
    });

    const limiters = useTestLimiters(() => ({ keyPrefix }));
    const limiterOn = (client: RedisConnection, options: SlidingWindowLimiterOptions = {}) =>
      limiters({ client, ...options });

    /** A clock the test moves by hand. */
    const manualClock = (start: number) => {
      const clock = { now: start, read: () => clock.now };
      return clock;
    };

    it('is the client configuration it claims to be', async () => {
      const client = shared as Redis6;
      const info = String(await client.call('CLIENT', 'INFO'));
      expect(info).toMatch(new RegExp(`\\bresp=${config.resp}\\b`));
      const map: unknown = await client.config('GET', 'port');
      expect(Array.isArray(map) ? 'flat array' : typeof map).toBe(config.maps);
      const counter = `${keyPrefix}counter`;
      const incremented: unknown = await client.incr(counter);
      expect(incremented).toBe(config.stringNumbers ? '1' : 1);
      await client.del(counter);
    });

    it("init() in mode 'auto' detects Redis Functions (INFO parsing)", async () => {
      const limiter = limiterOn(shared, { mode: 'auto' });
      await limiter.init();
      expect(limiter.mode).toBe('function');
    });

    it("tells Valkey from Redis, with the server's own version (INFO server, FUNCTION STATS parsing)", async () => {
      const node = shared as Redis6;
      expect(await readServerInfo(node)).toEqual(testServerIdentity());
      expect(await functionsUnavailableOn(node)).toBeUndefined();
    });

    it("loadFunctions 'auto' loads missing libraries, and recognises them as loaded afterwards (FUNCTION LIST WITHCODE parsing)", async () => {
      await ownAdmin.call('FUNCTION', 'FLUSH');
      await ownAdmin.config('RESETSTAT');

      await limiterOn(own, { functionName: 'sliding_allow_v1', loadFunctions: 'auto' }).init();
      await limiterOn(own, { functionName: 'sliding_allow_v2', loadFunctions: 'auto' }).init();

      const libraries = (await listLibraries(ownAdmin)).sort((a, b) => a.name.localeCompare(b.name));
      expect(libraries).toMatchObject([
        { name: 'rate_limit_v1', code: BUNDLED.v1 },
        { name: 'rate_limit_v2', code: BUNDLED.v2 },
      ]);
      expect((await commandStats(ownAdmin, 'function|load')).calls).toBe(2);

      // Parsed as present and identical: 'verify' passes and 'auto' loads nothing more.
      for (const functionName of ['sliding_allow_v1', 'sliding_allow_v2']) {
        await expect(limiterOn(own, { functionName, loadFunctions: 'verify' }).init()).resolves.toBeUndefined();
        await expect(limiterOn(own, { functionName, loadFunctions: 'auto' }).init()).resolves.toBeUndefined();
      }
      expect((await commandStats(ownAdmin, 'function|load')).calls).toBe(2);
    });

    it.each([
      [
        'other code',
        "#!lua name=rate_limit_v2\nredis.register_function('sliding_allow_v2', function() return {1, 1, 0, 0, 0} end)\n",
      ],
      ['one character changed', ALMOST_V2],
    ])(
      'a v2 library with different code (%s) is detected and left in place (WITHCODE parsing)',
      async (_label, foreign) => {
        await ownAdmin.call('FUNCTION', 'FLUSH');
        await ownAdmin.call('FUNCTION', 'LOAD', foreign);

        for (const loadFunctions of ['auto', 'verify'] as const) {
          await expect(limiterOn(own, { functionName: 'sliding_allow_v2', loadFunctions }).init()).rejects.toThrow(
            FunctionCodeMismatchError,
          );
        }
        expect(await listLibraries(ownAdmin)).toMatchObject([{ name: 'rate_limit_v2', code: foreign }]);
      },
    );

    it('v2: consume, peek and consumeAll report exact numbers', async () => {
      const t0 = 1_750_000_000_000;
      const clock = manualClock(t0);
      const limiter = limiterOn(shared, { functionName: 'sliding_allow_v2', clock: clock.read });
      const rule = { limit: 3, windowMs: 1000 };
      const base = { limit: 3, functionName: 'sliding_allow_v2' };

      expect(await limiter.consume('a', rule)).toEqual({
        ...base,
        allowed: true,
        remaining: 2,
        retryAfterMs: 0,
        resetMs: 1000,
      });
      clock.now = t0 + 10;
      expect(await limiter.consume('a', rule)).toEqual({
        ...base,
        allowed: true,
        remaining: 1,
        retryAfterMs: 0,
        resetMs: 1000,
      });
      clock.now = t0 + 20;
      expect(await limiter.consume('a', rule)).toEqual({
        ...base,
        allowed: true,
        remaining: 0,
        retryAfterMs: 0,
        resetMs: 1000,
      });
      clock.now = t0 + 30;
      // Full: the oldest entry (t0) leaves at t0 + 1000; the newest (t0 + 20) at t0 + 1020.
      expect(await limiter.consume('a', rule)).toEqual({
        ...base,
        allowed: false,
        remaining: 0,
        retryAfterMs: 970,
        resetMs: 990,
      });
      expect(await limiter.peek('a', rule)).toEqual({
        ...base,
        allowed: false,
        remaining: 0,
        retryAfterMs: 970,
        resetMs: 990,
        count: 3,
      });

      // An entry exactly one window old has left it.
      clock.now = t0 + 1000;
      expect(await limiter.peek('a', rule)).toEqual({
        ...base,
        allowed: true,
        remaining: 1,
        retryAfterMs: 0,
        resetMs: 20,
        count: 2,
      });

      const stacked = [
        { key: 'a', limit: 3, windowMs: 1000 },
        { key: 'b', limit: 1, windowMs: 5000 },
      ];
      const first = await limiter.consumeAll(stacked);
      expect(first).toMatchObject({ allowed: true, retryAfterMs: 0, functionName: 'sliding_allow_v2' });
      expect(first.limits.map((d) => [d.allowed, d.remaining, d.resetMs])).toEqual([
        [true, 0, 1000],
        [true, 0, 5000],
      ]);
      const second = await limiter.consumeAll(stacked);
      expect(second.allowed).toBe(false);
      expect(second.limits.map((d) => [d.allowed, d.remaining, d.retryAfterMs])).toEqual([
        [false, 0, 10],
        [false, 0, 5000],
      ]);
      expect(second.retryAfterMs).toBe(5000);
      expect(await sharedAdmin.zcard(`${keyPrefix}a`)).toBe(3);
      expect(await sharedAdmin.zcard(`${keyPrefix}b`)).toBe(1);
    });

    it('v2: decisions made together (one sliding_allow_many_v2 call) report exact numbers', async () => {
      // On this file's own server, whose call counts no other test file touches.
      await ownAdmin.call('FUNCTION', 'FLUSH');
      const limiter = limiterOn(own, { functionName: 'sliding_allow_v2', clock: () => 1_750_000_000_000 });
      await limiter.init();
      const rule = { limit: 2, windowMs: 1000 };
      await ownAdmin.config('RESETSTAT');

      const decisions = await Promise.all(['x', 'y', 'x', 'y', 'x', 'y'].map((key) => limiter.consume(key, rule)));

      expect(decisions.map((d) => [d.allowed, d.remaining, d.retryAfterMs, d.resetMs])).toEqual([
        [true, 1, 0, 1000],
        [true, 1, 0, 1000],
        [true, 0, 0, 1000],
        [true, 0, 0, 1000],
        [false, 0, 1000, 1000],
        [false, 0, 1000, 1000],
      ]);
      // The first at once (nothing was in flight), the other five in one call.
      expect((await commandStats(ownAdmin, 'fcall')).calls).toBe(2);
    });

    it('v1: consume, peek and consumeAll report exact numbers', async () => {
      const t0 = 1_750_000_000_000;
      const clock = manualClock(t0);
      const limiter = limiterOn(shared, { functionName: 'sliding_allow_v1', clock: clock.read });
      const rule = { limit: 3, windowMs: 1000 };
      const base = { limit: 3, functionName: 'sliding_allow_v1' };

      for (const remaining of [2, 1, 0]) {
        expect(await limiter.consume('a', rule)).toEqual({
          ...base,
          allowed: true,
          remaining,
          retryAfterMs: 0,
          resetMs: 1000,
        });
        clock.now += 10;
      }
      // v1 says nothing about time: a rejection asks for a full window, never too early.
      expect(await limiter.consume('a', rule)).toEqual({
        ...base,
        allowed: false,
        remaining: 0,
        retryAfterMs: 1000,
        resetMs: 1000,
      });
      expect(await limiter.peek('a', rule)).toMatchObject({ allowed: false, remaining: 0, count: 3 });
      clock.now = t0 + 1000;
      expect(await limiter.peek('a', rule)).toMatchObject({ allowed: true, remaining: 1, count: 2 });

      // One key at a time, then compensation: a rejected stacked request leaves no entry behind.
      clock.now = t0 + 500;
      const decision = await limiter.consumeAll([
        { key: 'c', limit: 5, windowMs: 1000 },
        { key: 'a', limit: 3, windowMs: 1000 },
      ]);
      expect(decision.allowed).toBe(false);
      expect(decision.limits.map((d) => [d.allowed, d.remaining])).toEqual([
        [true, 5],
        [false, 0],
      ]);
      expect(await sharedAdmin.zcard(`${keyPrefix}c`)).toBe(0);
      expect(await sharedAdmin.zcard(`${keyPrefix}a`)).toBe(3);
    });

    it.each(['sliding_allow_v1', 'sliding_allow_v2'])(
      "%s with clock 'server' records at the Redis server's time (v1 reads TIME through the client, v2 inside the function)",
      async (functionName) => {
        // The local clock is moved far away (2001-09-09) while the limiter is built and consumes.
        const localNow = 1_000_000_000_000;
        const limiter = limiterOn(shared, { functionName, clock: 'server' });
        const before = await serverNowMs(sharedAdmin);
        const spy = jest.spyOn(Date, 'now').mockReturnValue(localNow);
        let decision;
        try {
          await limiter.init();
          decision = await limiter.consume('s', { limit: 2, windowMs: 60_000 });
        } finally {
          spy.mockRestore();
        }
        const after = await serverNowMs(sharedAdmin);

        expect(decision).toMatchObject({ allowed: true, remaining: 1 });
        const [member, score] = (await sharedAdmin.zrange(`${keyPrefix}s`, '0', '-1', 'WITHSCORES')) as string[];
        expect(member).toEqual(expect.any(String));
        expect(Math.abs(Number(score) - localNow)).toBeGreaterThan(86_400_000);
        expect(Number(score)).toBeGreaterThanOrEqual(before);
        expect(Number(score)).toBeLessThanOrEqual(after);
        expect(await limiter.peek('s', { limit: 2, windowMs: 60_000 })).toMatchObject({
          allowed: true,
          remaining: 1,
          count: 1,
        });
      },
    );
  });
});
