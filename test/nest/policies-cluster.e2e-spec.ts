import Redis from 'ioredis';
import { RateLimitModule } from 'nestjs-sliding-limit';
import { RedisOverridesStore } from '../../lib/redis/overrides-store';
import {
  FunctionPolicyController,
  PlanPolicy,
  PlanService,
  PlansController,
} from '../fixtures/policies/policies.controllers';
import { startTestApp, type TestApp } from '../support/nest-app';
import { useRedisCluster } from '../support/redis-cluster';
import { TEST_LIMITER_SETTINGS } from '../support/test-limiter';
import { uniquePrefix } from '../support/test-redis';

/*
 * Limits as data on a Redis Cluster of 3 masters, through a Nest app with the guard: each caller's
 * tier, a plan change on the next request, a shadow candidate counted beside its limit, and a
 * per-key override set with RedisOverridesStore applying to the next request — for callers whose
 * keys live on every master (the override hash shares its limited key's slot: no CROSSSLOT).
 */
describe('policies, candidates and overrides on a Redis Cluster (3 masters)', () => {
  let admins: Redis[];
  let app: TestApp;
  let keyPrefix: string;
  // Declared before the cluster's own hooks: jest runs afterAll hooks in order, and the app goes first.
  afterAll(async () => {
    await app?.close();
    await Promise.all((admins ?? []).map((connection) => connection.quit()));
  });
  const own = useRedisCluster({ masters: 3, replicasPerMaster: 0 });

  beforeAll(async () => {
    admins = own.cluster().nodes.map((node) => new Redis({ host: '127.0.0.1', port: node.port }));
    keyPrefix = uniquePrefix('cluster-policies');
    app = await startTestApp({
      platform: 'express',
      controllers: [PlansController, FunctionPolicyController],
      providers: [PlanService, PlanPolicy],
      rateLimitModule: RateLimitModule.forRoot({
        ...TEST_LIMITER_SETTINGS,
        client: own.client(),
        keyPrefix,
        headers: { style: 'both', shadow: true },
      }),
    });
  });

  /** How many of the masters hold keys of this test whose names contain `part`. */
  const mastersHolding = async (part: string) => {
    const held = await Promise.all(admins.map((admin) => admin.keys(`${keyPrefix}*${part}*`)));
    return held.filter((keys) => keys.length > 0).length;
  };
  const callers = (label: string) => Array.from({ length: 9 }, (_, i) => `${label}-${i}`);

  it("gives each caller its tier's limits, and applies a plan change on the next request, history kept", async () => {
    const plans = app.app.get(PlanService);
    for (const caller of callers('tier')) {
      const pro = caller.endsWith('0') || caller.endsWith('5');
      if (pro) plans.plans.set(caller, 'pro');
      const limit = pro ? 6 : 3;
      for (let i = 0; i < limit; i++) {
        const ok = await app.http().get('/api/items').set('x-api-key', caller).expect(200);
        expect(ok.headers['x-ratelimit-limit']).toBe(String(limit));
      }
      const refused = await app.http().get('/api/items').set('x-api-key', caller).expect(429);
      expect(refused.headers['ratelimit-policy']).toBe(
        pro
          ? '"pro.api-minute";q=6;w=60, "pro.api-hour";q=100;w=3600'
          : '"free.api-minute";q=3;w=60, "free.api-hour";q=5;w=3600',
      );
    }
    expect(await mastersHolding('tier-')).toBe(3);

    // A free caller moved to pro gets pro's 6 on its next request, its 3 kept; moved back, refused.
    plans.plans.set('tier-1', 'pro');
    const upgraded = await app.http().get('/api/items').set('x-api-key', 'tier-1').expect(200);
    expect(upgraded.headers['x-ratelimit-remaining']).toBe('2');
    plans.plans.set('tier-1', 'free');
    await app.http().get('/api/items').set('x-api-key', 'tier-1').expect(429);
  });

  it('counts a shadow candidate in keys of its own, in its limit’s slot, and never refuses for it', async () => {
    for (const caller of callers('cand')) {
      const statuses = [];
      let shadow: unknown;
      for (let i = 0; i < 3; i++) {
        const response = await app.http().get('/api/reports').set('x-api-key', caller);
        statuses.push(response.status);
        if (i === 1) shadow = response.headers['x-ratelimit-shadow'];
      }
      expect({ caller, statuses, shadow }).toEqual({
        caller,
        statuses: [200, 200, 429],
        shadow: '"reports.candidate";q=1;r=0;w=60;would-refuse=?1',
      });
      const key = `${keyPrefix}reports:{header.x-api-key:${caller}}`;
      expect([
        await own.client().zcard(key),
        await own.client().zcard(`${keyPrefix}reports.candidate:{header.x-api-key:${caller}}`),
      ]).toEqual([2, 1]);
    }
    expect(await mastersHolding('.candidate:')).toBe(3);
  });

  it('applies an override set with RedisOverridesStore to the next request, on every master', async () => {
    const overrides = new RedisOverridesStore(own.client(), { keyPrefix });
    for (const caller of callers('vip')) {
      await app.http().get('/fn').set('x-api-key', caller).expect(200);
      await app.http().get('/fn').set('x-api-key', caller).expect(429);
      await overrides.set(`fn:{header.x-api-key:${caller}}`, { action: 'limit', limit: 5 }, { ttlMs: 60_000 });
      const raised = await app.http().get('/fn').set('x-api-key', caller).expect(200);
      expect(raised.headers['x-ratelimit-limit']).toBe('5');
      expect(raised.headers['ratelimit-policy']).toBe('"basic";q=5;w=60');
      await overrides.set(`fn:{header.x-api-key:${caller}}`, { action: 'block' }, { ttlMs: 30_000 });
      const blocked = await app.http().get('/fn').set('x-api-key', caller).expect(429);
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(30);
    }
    expect(await mastersHolding('|override')).toBe(3);
    expect((await overrides.list()).map((stored) => stored.override.action)).toEqual(Array(9).fill('block'));
  });
});
