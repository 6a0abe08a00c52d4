import type { INestApplication, Type } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { MemoryBackend, RateLimitModule, type RateLimitModuleOptions } from 'nestjs-sliding-limit';
import { MemoryOverridesStore } from '../../lib/memory/memory-overrides-store';
import {
  FunctionPolicyController,
  PlanPolicy,
  PlanService,
  PlansController,
  ShadowController,
} from '../fixtures/policies/policies.controllers';
import { manualClock, PLATFORMS, startTestApp, type Platform } from '../support/nest-app';
import { sharedRedisUrl } from '../support/test-redis';
import { RATE_LIMIT_OPTIONS } from '../../lib/nest/rate-limit.constants';
import { RateLimitTestingModule, TestClock } from 'nestjs-sliding-limit/testing';
import type { ResolvedRateLimitOptions } from '../../lib/nest/rate-limit.options';

/*
 * Limits as data off Redis: the in-memory store (`store: 'memory'`) and the testing kit
 * (RateLimitTestingModule, forRoot and override) give each caller its tier, apply a plan change on
 * the next request, let shadow limits and candidates refuse nothing while a candidate counts in keys
 * of its own, and apply a per-key override — set in the memory store's keyspace — on the next
 * request until it expires, exactly as the guard does on Redis (test/nest/policies.e2e-spec.ts).
 */

const CONTROLLERS: Type[] = [PlansController, FunctionPolicyController, ShadowController];
const PROVIDERS = [PlanService, PlanPolicy];
const OPTIONS = { headers: { style: 'both', shadow: true } } as const satisfies Partial<RateLimitModuleOptions>;

/** An app on one of the stores, with what a test reaches in it. */
interface StoreApp {
  http(): ReturnType<typeof request>;
  plans: PlanService;
  backend: MemoryBackend;
  advance(ms: number): void;
  close(): Promise<void>;
}

/** The memory store and the two ways into the testing kit. */
const STORES: Array<[string, (platform: Platform) => Promise<StoreApp>]> = [
  [
    "store: 'memory'",
    async (platform) => {
      const clock = manualClock();
      const app = await startTestApp({
        platform,
        controllers: CONTROLLERS,
        providers: PROVIDERS,
        rateLimitModule: RateLimitModule.forRoot({ store: 'memory', clock: clock.now, ...OPTIONS }),
      });
      const options = app.app.get<ResolvedRateLimitOptions>(RATE_LIMIT_OPTIONS);
      return {
        http: app.http,
        plans: app.app.get(PlanService),
        backend: options.backend as MemoryBackend,
        advance: clock.advance,
        close: app.close,
      };
    },
  ],
  [
    'RateLimitTestingModule.forRoot',
    async (platform) => {
      const app = await startTestApp({
        platform,
        controllers: CONTROLLERS,
        providers: PROVIDERS,
        rateLimitModule: RateLimitTestingModule.forRoot(OPTIONS),
      });
      const clock = app.app.get(TestClock);
      return {
        http: app.http,
        plans: app.app.get(PlanService),
        backend: app.app.get(MemoryBackend),
        advance: (ms) => clock.advance(ms),
        close: app.close,
      };
    },
  ],
  [
    'RateLimitTestingModule.override',
    async (platform) => {
      // The application's module, on Redis; the testing kit replaces its store and clock.
      const { builder, clock, backend } = RateLimitTestingModule.override(
        Test.createTestingModule({
          imports: [RateLimitModule.forRoot({ redis: sharedRedisUrl(), ...OPTIONS })],
          controllers: CONTROLLERS,
          providers: PROVIDERS,
        }),
      );
      const moduleRef = await builder.compile();
      const app: INestApplication = moduleRef.createNestApplication(
        platform === 'fastify' ? new FastifyAdapter() : new ExpressAdapter(),
        { logger: false },
      );
      await app.listen(0, '127.0.0.1');
      return {
        http: () => request(app.getHttpServer()),
        plans: app.get(PlanService),
        backend,
        advance: (ms) => clock.advance(ms),
        close: () => app.close(),
      };
    },
  ],
];

describe.each(PLATFORMS)('policies, shadow limits and overrides off Redis, on %s', (platform) => {
  describe.each(STORES)('%s', (_store, startOn) => {
    let app: StoreApp | undefined;
    afterEach(async () => {
      await app?.close();
      app = undefined;
    });
    const start = async () => (app = await startOn(platform));

    it("gives each caller its tier's limits, resolving the policy once per request, and says so in the headers", async () => {
      const app = await start();
      app.plans.plans.set('pro-key', 'pro');
      const free = await app.http().get('/api/items').set('x-api-key', 'free-key').expect(200);
      expect(app.plans.lookups).toBe(1);
      expect(free.headers['x-ratelimit-limit']).toBe('3');
      expect(free.headers['ratelimit-policy']).toBe('"free.api-minute";q=3;w=60, "free.api-hour";q=5;w=3600');
      const pro = await app.http().get('/api/items').set('x-api-key', 'pro-key').expect(200);
      expect(app.plans.lookups).toBe(2);
      expect(pro.headers['x-ratelimit-limit']).toBe('6');
      const gold = await app.http().get('/fn').set({ 'x-api-key': 'a', 'x-tier': 'gold' }).expect(200);
      expect(gold.headers['ratelimit-policy']).toBe('"gold";q=3;w=60');
    });

    it('applies a plan change on the next request, keeping the history both ways', async () => {
      const app = await start();
      const key = { 'x-api-key': 'mover' };
      for (let i = 0; i < 3; i++) await app.http().get('/api/items').set(key).expect(200);
      await app.http().get('/api/items').set(key).expect(429);
      app.plans.plans.set('mover', 'pro');
      const upgraded = await app.http().get('/api/items').set(key).expect(200);
      expect(upgraded.headers['x-ratelimit-remaining']).toBe('2');
      await app.http().get('/api/items').set(key).expect(200);
      app.plans.plans.set('mover', 'free');
      const downgraded = await app.http().get('/api/items').set(key).expect(429);
      expect(downgraded.headers['x-ratelimit-limit']).toBe('5');
      // A minute later free's 3 per minute has room again, its 5 per hour none.
      app.advance(60_000);
      await app.http().get('/api/items').set(key).expect(429);
    });

    it('never refuses for a shadow limit or a candidate; the candidate counts in keys of its own', async () => {
      const app = await start();
      const key = { 'x-api-key': 'trial' };
      const shadow = [];
      for (let i = 0; i < 3; i++) shadow.push(await app.http().get('/shadow').set(key).expect(200));
      expect(shadow.map((r) => r.headers['x-ratelimit-shadow'])).toEqual([
        '"trial";q=2;r=1;w=60;would-refuse=?0',
        '"trial";q=2;r=0;w=60;would-refuse=?0',
        '"trial";q=2;r=0;w=60;would-refuse=?1',
      ]);
      const reports = [];
      for (let i = 0; i < 3; i++) reports.push(await app.http().get('/api/reports').set(key));
      expect(reports.map((r) => r.status)).toEqual([200, 200, 429]);
      expect(reports[1].headers['x-ratelimit-shadow']).toBe('"reports.candidate";q=1;r=0;w=60;would-refuse=?1');
      expect(reports[1].headers['ratelimit-policy']).toBe('"free";q=2;w=60');
      const entries = (name: string) => app.backend.entries(`rl:${name}:{header.x-api-key:trial}`).length;
      expect([entries('reports'), entries('reports.candidate'), entries('trial')]).toEqual([2, 1, 2]);
    });

    it('applies an override set in the memory store to the next request, until it expires', async () => {
      const app = await start();
      const overrides = new MemoryOverridesStore(app.backend.model);
      const key = { 'x-api-key': 'vip' };
      await app.http().get('/fn').set(key).expect(200);
      await app.http().get('/fn').set(key).expect(429);
      await overrides.set('fn:{header.x-api-key:vip}', { action: 'limit', limit: 5 }, { ttlMs: 60_000 });
      const raised = await app.http().get('/fn').set(key).expect(200);
      expect(raised.headers['x-ratelimit-limit']).toBe('5');
      expect(raised.headers['ratelimit-policy']).toBe('"basic";q=5;w=60');
      await overrides.set('fn:{header.x-api-key:vip}', { action: 'block' }, { ttlMs: 10_000, note: 'abuse' });
      const blocked = await app.http().get('/fn').set(key).expect(429);
      expect(blocked.headers['retry-after']).toBe('10');
      await overrides.set('fn:{header.x-api-key:vip}', { action: 'exempt' }, { ttlMs: 10_000 });
      for (let i = 0; i < 3; i++) await app.http().get('/fn').set(key).expect(200);
      // Expired: the tier's 1 per minute again, over the 2 recorded.
      app.advance(10_001);
      expect(await overrides.get('fn:{header.x-api-key:vip}')).toBeUndefined();
      const plain = await app.http().get('/fn').set(key).expect(429);
      expect(plain.headers['ratelimit-policy']).toBe('"basic";q=1;w=60');
    });
  });
});
