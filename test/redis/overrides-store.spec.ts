import calculateSlot from 'cluster-key-slot';
import { RateLimitConfigError } from '../../lib/core/errors/rate-limit-config.error';
import { UnexpectedReplyError } from '../../lib/core/errors/unexpected-reply.error';
import type { AllowCall } from '../../lib/core/function-contract';
import type { OverrideStore } from '../../lib/core/key-overrides';
import { limitedKeyOf, overrideKeyOf } from '../../lib/core/override-keys';
import { globMatches } from '../../lib/memory/glob';
import { MemoryOverridesStore } from '../../lib/memory/memory-overrides-store';
import { SlidingWindowModel } from '../../lib/memory/sliding-window-model';
import { V2_CONTRACT } from '../../lib/redis/contracts/v2.contract';
import { RedisOverridesStore } from '../../lib/redis/overrides-store';
import { ensureLibraries } from '../support/lua-functions';
import { useRedisCluster } from '../support/redis-cluster';
import { sleep } from '../support/sleep';
import { uniquePrefix, useSharedClient } from '../support/test-redis';

/*
 * Per-key overrides: the Redis store and its in-memory twin behave alike (set, get, delete, list,
 * expiry, errors), and sliding_allow_v2 applies what they store; on a cluster, list scans every
 * master and an override lives in its key's slot.
 */

const T0 = 1_735_660_800_000;

/** One store under test: how to make it, move its clock, and run a v2 decision on its keys. */
interface Harness {
  store: OverrideStore;
  /** Lets `ms` pass for the store's expiry (the model's clock, or real time on Redis). */
  pass(ms: number): Promise<void>;
  /** FCALL sliding_allow_v2 through the contract (overrides read) on the same keyspace. */
  decide(call: AllowCall): Promise<unknown>;
  /** Writes a hash at a key directly, as an operator's HSET would. */
  hset(key: string, fields: string[]): Promise<void>;
}

describe.each(['redis', 'memory'] as const)('overrides in %s', (kind) => {
  const redis = useSharedClient();
  let prefix: string;
  let harness: Harness;

  beforeAll(() => ensureLibraries(redis));
  beforeEach(() => {
    prefix = uniquePrefix('ovr');
    if (kind === 'redis') {
      harness = {
        store: new RedisOverridesStore(redis, { keyPrefix: prefix, clock: () => T0 }),
        pass: (ms) => sleep(ms),
        decide: (call) => {
          const keys = V2_CONTRACT.allowKeys?.(call) ?? call.keys;
          return redis.fcall('sliding_allow_v2', keys.length, ...keys, ...V2_CONTRACT.allowArguments(call));
        },
        hset: async (key, fields) => {
          await redis.hset(key, ...fields);
        },
      };
    } else {
      let now = T0;
      const model = new SlidingWindowModel({ clock: () => now });
      harness = {
        store: new MemoryOverridesStore(model, { keyPrefix: prefix }),
        pass: async (ms) => {
          now += ms;
        },
        decide: async (call) => {
          const keys = V2_CONTRACT.allowKeys?.(call) ?? call.keys;
          return model.call('sliding_allow_v2', keys, V2_CONTRACT.allowArguments(call).map(String));
        },
        hset: async (key, fields) => model.hset(key, fields),
      };
    }
  });

  const callOn = (key: string, member: string, nowMs = Date.now()): AllowCall => ({
    keys: [prefix + key],
    rules: [{ limit: 2, windowMs: 60_000 }],
    nowMs,
    member,
    maxClockSkewMs: 1000,
    overrides: true,
  });
  const outcomeOf = async (key: string, member: string) =>
    V2_CONTRACT.parseAllowReply(await harness.decide(callOn(key, member)), [{ limit: 2, windowMs: 60_000 }]);

  it('sets, gets, replaces and deletes an override, which the decision applies', async () => {
    const { store } = harness;
    const stored = await store.set('user:{42}', { action: 'limit', limit: 5 }, { note: 'a partner', by: 'ops' });
    expect(stored).toEqual({
      key: 'user:{42}',
      override: { action: 'limit', limit: 5 },
      note: 'a partner',
      by: 'ops',
      createdAt: T0,
    });
    expect(await store.get('user:{42}')).toEqual(stored);
    expect((await outcomeOf('user:{42}', 'a')).limits[0]).toMatchObject({
      allowed: true,
      effectiveLimit: 5,
      override: 'limit',
      remaining: 4,
    });
    await store.set('user:{42}', { action: 'block' }, { ttlMs: 60_000 });
    const blocked = await outcomeOf('user:{42}', 'b');
    expect(blocked.allowed).toBe(false);
    expect(blocked.limits[0]).toMatchObject({ override: 'block', effectiveLimit: 0 });
    // The time the block has left: nearly all of its minute (a loaded host may take seconds to ask).
    expect(blocked.limits[0].retryAfterMs).toBeGreaterThan(50_000);
    expect(await store.get('user:{42}')).toMatchObject({
      override: { action: 'block' },
      expiresInMs: expect.any(Number),
    });
    expect(await store.delete('user:{42}')).toBe(true);
    expect(await store.delete('user:{42}')).toBe(false);
    expect(await store.get('user:{42}')).toBeUndefined();
    const after = (await outcomeOf('user:{42}', 'c')).limits[0];
    expect({ effectiveLimit: after.effectiveLimit, override: after.override }).toEqual({ effectiveLimit: 2 });
  });

  it('keeps a key without braces in a slot of its own, and exempts it', async () => {
    await harness.store.set('global', { action: 'exempt' });
    for (const member of ['a', 'b', 'c']) expect((await outcomeOf('global', member)).allowed).toBe(true);
    expect((await outcomeOf('global', 'd')).limits[0]).toMatchObject({ override: 'exempt', count: 0 });
  });

  it('lets an override expire by itself', async () => {
    // A second: the override outlives the next call, however late a loaded host makes it.
    await harness.store.set('temp:{1}', { action: 'block' }, { ttlMs: 1000 });
    expect(await harness.store.get('temp:{1}')).toBeDefined();
    await harness.pass(1100);
    expect(await harness.store.get('temp:{1}')).toBeUndefined();
    expect((await outcomeOf('temp:{1}', 'a')).allowed).toBe(true);
  });

  it('lists overrides by a glob on the key, sorted, at most count', async () => {
    const { store } = harness;
    await store.set('login:{ip:1}', { action: 'block' });
    await store.set('login:{ip:2}', { action: 'limit', limit: 0 });
    await store.set('login-global', { action: 'exempt' });
    await store.set('order:{user:1}', { action: 'exempt' });
    const keys = async (match?: string, count?: number) => (await store.list({ match, count })).map((o) => o.key);
    expect(await keys()).toEqual(['login-global', 'login:{ip:1}', 'login:{ip:2}', 'order:{user:1}']);
    expect(await keys('login:*')).toEqual(['login:{ip:1}', 'login:{ip:2}']);
    expect(await keys('login*')).toEqual(['login-global', 'login:{ip:1}', 'login:{ip:2}']);
    expect(await keys('*', 2)).toHaveLength(2);
  });

  it('refuses invalid overrides, options and keys with every problem named', async () => {
    const { store } = harness;
    const problemsOf = async (set: () => Promise<unknown>) => {
      try {
        await set();
      } catch (error) {
        expect(error).toBeInstanceOf(RateLimitConfigError);
        return (error as RateLimitConfigError).problems;
      }
      throw new Error('no error');
    };
    expect(
      await problemsOf(() => store.set('a{}b', { action: 'limit', limit: -1 }, { ttlMs: 5, expiresAt: T0 + 10 })),
    ).toEqual([
      expect.stringMatching(/^key cannot carry overrides: .*braces but no valid cluster hash tag/),
      expect.stringMatching(/^override.limit must be a whole number from 0/),
      'give ttlMs or expiresAt, not both',
    ]);
    expect(await problemsOf(() => store.set('k', { action: 'slow' } as never, { note: 'x'.repeat(501) }))).toEqual([
      expect.stringMatching(/^override.action must be one of limit, exempt, block/),
      expect.stringMatching(/^note must be a string of at most 500 characters/),
    ]);
    expect(await problemsOf(() => store.list({ count: 0 }))).toEqual([expect.stringMatching(/^count must be/)]);
  });

  it('reports a malformed override hash (an operator’s edit) as an unexpected reply, as the decision refuses it', async () => {
    const overrideKey = overrideKeyOf(`${prefix}bad:{1}`) as string;
    await harness.hset(overrideKey, ['action', 'slower']);
    await expect(harness.store.get('bad:{1}')).rejects.toThrow(UnexpectedReplyError);
    await expect(outcomeOf('bad:{1}', 'a')).rejects.toThrow(`ERR invalid override at ${overrideKey}`);
  });
});

describe('override keys', () => {
  it('name the key they override, in its slot; keys with braces but no hash tag have none', () => {
    for (const limited of ['rl:login:{ip:10.0.0.1}', 'rl:global', '{x}', 'x', 'a{b}c{d}']) {
      const overrideKey = overrideKeyOf(limited) as string;
      expect({ limited, slot: calculateSlot(overrideKey), back: limitedKeyOf(overrideKey) }).toEqual({
        limited,
        slot: calculateSlot(limited),
        back: limited,
      });
    }
    // `{x}` and `x` hash alike; their overrides must not be one key.
    expect(overrideKeyOf('{x}')).not.toBe(overrideKeyOf('x'));
    for (const limited of ['a{}b', 'a}b', 'a{b']) expect(overrideKeyOf(limited)).toBeUndefined();
  });

  it('are matched by Redis’ glob syntax in memory as SCAN matches them', () => {
    expect(globMatches('rl:*|override', 'rl:login:{ip:1}|override')).toBe(true);
    expect(globMatches('{rl:*}|override-wrapped', '{rl:global}|override-wrapped')).toBe(true);
    expect(globMatches('rl:l?gin\\*[a-c][^0-9]', 'rl:login*bx')).toBe(true);
    expect(globMatches('rl:l?gin\\*[a-c][^0-9]', 'rl:login*b1')).toBe(false);
  });
});

describe('overrides on a Redis Cluster (3 masters)', () => {
  const own = useRedisCluster({ masters: 3, replicasPerMaster: 0 });
  beforeAll(() => Promise.all(own.masters().map((node) => ensureLibraries(node))));

  it('lists the overrides of every master, and a decision reads them without CROSSSLOT', async () => {
    const client = own.client();
    const store = new RedisOverridesStore(client, { keyPrefix: 'rl:' });
    const keys = Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? `plain-${i}` : `user:{${i}}`));
    for (const key of keys) await store.set(key, { action: 'limit', limit: 1 });
    const slots = new Set(keys.map((key) => calculateSlot(`rl:${key}`)));
    expect(slots.size).toBeGreaterThan(3);
    expect((await store.list()).map((o) => o.key)).toEqual([...keys].sort());
    const rules = [{ limit: 5, windowMs: 60_000 }];
    for (const key of keys) {
      const call: AllowCall = {
        keys: [`rl:${key}`],
        rules,
        nowMs: Date.now(),
        member: 'a',
        maxClockSkewMs: 1000,
        overrides: true,
      };
      const fcallKeys = V2_CONTRACT.allowKeys?.(call) ?? [];
      const reply = await client.fcall(
        'sliding_allow_v2',
        fcallKeys.length,
        ...fcallKeys,
        ...V2_CONTRACT.allowArguments(call),
      );
      expect({ key, limit: V2_CONTRACT.parseAllowReply(reply, rules).limits[0].effectiveLimit }).toEqual({
        key,
        limit: 1,
      });
    }
  }, 60_000);
});
