import { Module, type DynamicModule, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { DEFAULT_FUNCTION_NAME, MemoryBackend, RateLimitModule, SlidingWindowLimiter } from 'nestjs-sliding-limit';
import { QuotaController } from '../fixtures/cost/cost.controllers';
import { testRateLimitModule } from '../support/nest-app';
import { testLimiter } from '../support/test-limiter';
import { connectShared, uniquePrefix } from '../support/test-redis';
import { FUNCTION_VERSIONS } from '../../lib/redis/function-versions';
import { RateLimitTestingModule } from 'nestjs-sliding-limit/testing';

/** An application's own module around `rateLimit`, serving routes with a cost and a `precisionMs`. */
function appModule(rateLimit: DynamicModule): DynamicModule {
  @Module({ imports: [rateLimit], controllers: [QuotaController] })
  class AppModule {}
  return { module: AppModule };
}

/*
 * One default function version everywhere: whichever way an application gets its limiter without
 * naming a function, it runs DEFAULT_FUNCTION_NAME, and that version takes every limit the
 * decorators can describe (a cost, a precisionMs) — so no setup starts on a version that refuses them.
 */
describe('the default function version', () => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('supports every feature of the decorators: costs, bounded-memory windows, shadow limits, overrides', () => {
    const contract = FUNCTION_VERSIONS.find((version) => version.allowFunction === DEFAULT_FUNCTION_NAME);
    expect(contract).toMatchObject({ full: true });
  });

  it.each([
    ['RateLimitModule on Redis', () => testRateLimitModule()],
    ["RateLimitModule with store: 'memory'", () => RateLimitModule.forRoot({ store: 'memory' })],
    ['RateLimitTestingModule.forRoot', () => RateLimitTestingModule.forRoot()],
  ])('is what %s runs, and it starts routes with costs and precisionMs', async (_, rateLimit) => {
    const moduleRef = await Test.createTestingModule({ imports: [appModule(rateLimit())] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    expect(app.get(SlidingWindowLimiter).functionName).toBe(DEFAULT_FUNCTION_NAME);
    const exported = await request(app.getHttpServer()).get('/api/export').set('x-api-key', 'k').expect(200);
    expect(exported.headers['x-ratelimit-remaining']).toBe('15'); // the quota's 25 less a cost of 10
  });

  it('is what RateLimitTestingModule.override runs for an application that names none', async () => {
    const { builder } = RateLimitTestingModule.override(
      Test.createTestingModule({ imports: [appModule(RateLimitModule.forRoot({ redis: 'redis://127.0.0.1:1' }))] }),
    );
    app = (await builder.compile()).createNestApplication({ logger: false });
    await app.init();
    expect(app.get(SlidingWindowLimiter).functionName).toBe(DEFAULT_FUNCTION_NAME);
    await request(app.getHttpServer()).get('/api/export').set('x-api-key', 'k').expect(200);
  });

  it('is what a SlidingWindowLimiter runs, on Redis and on the in-memory store', async () => {
    const redis = connectShared();
    const onRedis = testLimiter({ client: redis, keyPrefix: uniquePrefix('default') });
    const inMemory = testLimiter({ backend: new MemoryBackend() });
    try {
      expect(onRedis.functionName).toBe(DEFAULT_FUNCTION_NAME);
      expect(inMemory.functionName).toBe(DEFAULT_FUNCTION_NAME);
      const rule = { key: 'k', limit: 30, windowMs: 60_000, precisionMs: 1_000 };
      await expect(onRedis.consume('k', rule, { cost: 10 })).resolves.toMatchObject({ allowed: true, remaining: 20 });
      await expect(inMemory.consume('k', rule, { cost: 10 })).resolves.toMatchObject({ allowed: true, remaining: 20 });
    } finally {
      await onRedis.close();
      await inMemory.close();
      redis.disconnect();
    }
  });
});
