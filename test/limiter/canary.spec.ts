import type Redis from 'ioredis';
import { FunctionCodeMismatchError, FunctionNotLoadedError, RateLimitConfigError } from '../../lib';
import { masterNodes } from '../../lib/redis/redis-nodes';
import { librarySource } from '../support/lua-functions';
import { useOwnRedisServer } from '../support/own-redis';
import { useRedisCluster } from '../support/redis-cluster';
import { libraryNames } from '../support/redis-inspect';
import { testLimiter, useTestLimiters } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';
import { waitFor } from '../support/wait-for';
import { parseInstanceReport } from '../../lib/core/instance-report';

const rule = { limit: 5, windowMs: 60_000 };

describe('canary split', () => {
  const redis = useSharedClient();
  const limiterWith = useTestLimiters(() => ({ client: redis, functionName: 'sliding_allow_v1' }));
  /**
   * A limiter on v1 sending `percent` of keys to v2, started: a decision made before start-up has
   * finished is the failure policy's, on the configured function, whatever the canary says.
   */
  const canaryOf = async (percent: number, keyPrefix: string) => {
    const limiter = limiterWith({ keyPrefix, canary: { functionName: 'sliding_allow_v2', percent } });
    await limiter.init();
    return limiter;
  };

  it.each([1, 10, 50])(
    'sends %i%% of 10,000 keys to the candidate (±0.5 points), the same keys every time',
    async (percent) => {
      const keyPrefix = uniquePrefix('canary');
      const limiter = await canaryOf(percent, keyPrefix);
      const keys = Array.from({ length: 10_000 }, (_, i) => `user:${i}`);
      const first = await Promise.all(keys.map((key) => limiter.consume(key, rule)));
      const toCanary = first.filter((d) => d.functionName === 'sliding_allow_v2').length;
      // The bucket hash is deterministic: for user:0 … user:9999 the shares are off by 0, 0.19 and 0.46 points.
      expect(toCanary).toBeGreaterThan(0);
      expect(Math.abs((toCanary / keys.length) * 100 - percent)).toBeLessThanOrEqual(0.5);

      // Sticky: a second request per key, and another process's limiter, pick the same versions.
      const other = await canaryOf(percent, keyPrefix);
      const again = await Promise.all(keys.slice(0, 2000).map((key) => other.consume(key, rule)));
      expect(again.map((d) => d.functionName)).toEqual(first.slice(0, 2000).map((d) => d.functionName));
      expect(again.every((d) => d.remaining === 3)).toBe(true);

      await deleteByPrefix(redis, keyPrefix);
    },
  );

  it('grows the canary by adding keys: a key in the 10% share stays in the 50% share', async () => {
    const keys = Array.from({ length: 2000 }, (_, i) => `ip:10.0.${i >> 8}.${i & 255}`);
    const canaryKeys = async (percent: number): Promise<Set<string>> => {
      const keyPrefix = uniquePrefix(`grow${percent}`);
      const limiter = await canaryOf(percent, keyPrefix);
      const decisions = await Promise.all(keys.map((key) => limiter.consume(key, rule)));
      await deleteByPrefix(redis, keyPrefix);
      return new Set(keys.filter((_, i) => decisions[i].functionName === 'sliding_allow_v2'));
    };
    const at10 = await canaryKeys(10);
    const at50 = await canaryKeys(50);
    expect(at10.size).toBeGreaterThan(0);
    expect(at50.size).toBeGreaterThan(at10.size);
    expect([...at10].filter((key) => !at50.has(key))).toEqual([]);
  });

  it('counts decisions, rejections and latency per function name', async () => {
    const limiter = await canaryOf(50, uniquePrefix('metrics'));
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    for (let round = 0; round < 2; round++)
      await Promise.all(keys.map((key) => limiter.consume(key, { limit: 1, windowMs: 60_000 })));
    const snapshot = limiter.metrics.snapshot();
    expect(snapshot.map((m) => m.functionName).sort()).toEqual(['sliding_allow_v1', 'sliding_allow_v2']);
    const total = snapshot.reduce((sum, m) => sum + m.calls, 0);
    expect(total).toBe(400);
    for (const m of snapshot) {
      expect(m.allowed).toBe(m.rejected);
      expect(m.calls).toBe(m.allowed + m.rejected);
      expect(m.latencyMs.count).toBe(m.calls);
      expect(m.latencyMs.p50).toBeGreaterThan(0);
    }
  });

  it('counts failed calls by kind, and the decisions the failure policy made instead', async () => {
    let now = 1_735_660_800_000;
    const limiter = limiterWith({
      keyPrefix: uniquePrefix('errors'),
      functionName: 'sliding_allow_v2',
      clock: () => now,
      maxClockSkewMs: 0,
      logger: { log: () => undefined, warn: () => undefined },
    });
    await limiter.consume('k', rule);
    now -= 10;
    await expect(limiter.consume('k', rule, { onRedisError: 'throw' })).rejects.toThrow(/CLOCKSKEW/);
    expect(await limiter.consume('k', rule, { onRedisError: 'deny' })).toMatchObject({
      allowed: false,
      degraded: 'deny',
    });
    expect(await limiter.consume('k', rule)).toMatchObject({ allowed: true, degraded: 'allow' });
    expect(limiter.metrics.snapshot()).toEqual([
      expect.objectContaining({
        functionName: 'sliding_allow_v2',
        calls: 4,
        allowed: 1,
        errors: { clock_skew: 3 },
        fallbacks: { deny: 1, allow: 1 },
      }),
    ]);
  });
});

describe('switching functions at runtime', () => {
  // A server of this block's own: its functions are flushed before each test.
  const own = useOwnRedisServer();
  own.emptyBeforeEach();
  let redis: Redis;
  beforeAll(() => {
    redis = own.connect();
  });
  const limiterWith = useTestLimiters(() => ({ client: redis, functionName: 'sliding_allow_v2' }));

  it("takes effect for the next call and keeps each key's history", async () => {
    const limiter = limiterWith();
    await limiter.consume('k', rule);
    await limiter.use('sliding_allow_v1');
    expect(limiter.functionName).toBe('sliding_allow_v1');
    const decision = await limiter.consume('k', rule);
    expect(decision).toMatchObject({ functionName: 'sliding_allow_v1', remaining: 3 });
    await limiter.use({ functionName: 'sliding_allow_v1', canary: { functionName: 'sliding_allow_v2', percent: 100 } });
    expect(limiter.canary).toEqual({ functionName: 'sliding_allow_v2', percent: 100 });
    expect(await limiter.consume('k', rule)).toMatchObject({ functionName: 'sliding_allow_v2', remaining: 2 });
  });

  it('reports the selection in effect once started: a 0 % canary or one naming the stable function is none', async () => {
    for (const canary of [
      { functionName: 'sliding_allow_v1', percent: 0 },
      { functionName: 'sliding_allow_v2', percent: 20 },
    ]) {
      const limiter = limiterWith({ canary });
      expect(limiter.canary).toEqual(canary); // as configured, before start-up
      await limiter.init();
      expect(limiter.canary).toBeUndefined();
      expect(limiter.functionName).toBe('sliding_allow_v2');
    }
  });

  it('reports its functions to Redis at start-up and again right after a switch (report option, on by default)', async () => {
    const limiter = limiterWith({ report: { instanceId: 'web-1', intervalMs: 60_000 } });
    const reportOf = async () => parseInstanceReport(await redis.get('rl:__nsl:instance:web-1'));
    await limiter.init();
    // The start-up report is written in the background: wait for it rather than for a guessed time.
    const first = await waitFor(reportOf, (report) => report?.functionName === 'sliding_allow_v2');
    expect(first).toMatchObject({ instanceId: 'web-1', functionName: 'sliding_allow_v2', canary: null });
    await limiter.use({ functionName: 'sliding_allow_v2', canary: { functionName: 'sliding_allow_v1', percent: 5 } });
    expect(await reportOf()).toMatchObject({
      functionName: 'sliding_allow_v2',
      canary: { functionName: 'sliding_allow_v1', percent: 5 },
    });
    expect(await redis.pttl('rl:__nsl:instance:web-1')).toBeGreaterThan(170_000);
  });

  it('loads the new library first under loadFunctions auto', async () => {
    const limiter = limiterWith();
    await limiter.init();
    expect(await libraryNames(redis)).toEqual(['rate_limit_v2']);
    await limiter.use('sliding_allow_v1');
    expect(await libraryNames(redis)).toEqual(['rate_limit_v1', 'rate_limit_v2']);
  });

  it('keeps the current function when the new one is not loaded (verify), and says why', async () => {
    await redis.call('FUNCTION', 'LOAD', librarySource('v2'));
    const limiter = limiterWith({ loadFunctions: 'verify' });
    await limiter.init();
    await expect(limiter.use('sliding_allow_v1')).rejects.toThrow(FunctionNotLoadedError);
    await expect(limiter.use('sliding_allow_v1')).rejects.toThrow(
      new RegExp(`sliding_allow_v1 \\(library rate_limit_v1\\) is not loaded on 127.0.0.1:${own.server().port}`),
    );
    expect(limiter.functionName).toBe('sliding_allow_v2');
    expect((await limiter.consume('k', rule)).functionName).toBe('sliding_allow_v2');
  });

  it("verifies even when loadFunctions is 'off'", async () => {
    await redis.call('FUNCTION', 'LOAD', librarySource('v2'));
    const limiter = limiterWith({ loadFunctions: 'off' });
    await expect(limiter.use('sliding_allow_v1')).rejects.toThrow(FunctionNotLoadedError);
    expect(limiter.functionName).toBe('sliding_allow_v2');
  });

  it('keeps the current function when the new library has other code', async () => {
    await redis.call(
      'FUNCTION',
      'LOAD',
      librarySource('v1').replace('-- PEXPIRE takes', '-- patched by hand; PEXPIRE takes'),
    );
    const limiter = limiterWith();
    await limiter.init();
    await expect(limiter.use('sliding_allow_v1')).rejects.toThrow(FunctionCodeMismatchError);
    expect(limiter.functionName).toBe('sliding_allow_v2');
  });

  it('rejects unknown names and bad shares before touching Redis', async () => {
    const limiter = limiterWith();
    await expect(limiter.use('sliding_allow_v7')).rejects.toThrow(RateLimitConfigError);
    await expect(
      limiter.use({ functionName: 'sliding_allow_v1', canary: { functionName: 'sliding_allow_v2', percent: 120 } }),
    ).rejects.toThrow(/canary.percent must be a number from 0 to 100, got 120/);
    expect(await libraryNames(redis)).toEqual([]);
  });
});

describe('switching functions on a cluster', () => {
  const own = useRedisCluster();

  it('verifies the new function on every master and names the one that lacks it', async () => {
    const client = own.client();
    const limiter = testLimiter({ client, functionName: 'sliding_allow_v2', loadFunctions: 'verify' });
    const masters = await masterNodes(client);
    await Promise.all(masters.map((node) => node.call('FUNCTION', 'LOAD', librarySource('v2'))));
    await limiter.init();
    await Promise.all(masters.slice(1).map((node) => node.call('FUNCTION', 'LOAD', librarySource('v1'))));
    const missing = `${masters[0].options.host}:${masters[0].options.port}`;
    await expect(limiter.use('sliding_allow_v1')).rejects.toThrow(`is not loaded on ${missing};`);
    expect(limiter.functionName).toBe('sliding_allow_v2');

    await masters[0].call('FUNCTION', 'LOAD', librarySource('v1'));
    await limiter.use('sliding_allow_v1');
    const decisions = await Promise.all(Array.from({ length: 30 }, (_, i) => limiter.consume(`user:${i}`, rule)));
    expect(decisions.every((d) => d.allowed && d.functionName === 'sliding_allow_v1')).toBe(true);
  });
});

async function deleteByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}
