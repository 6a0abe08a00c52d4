import { Controller, Get, Module, UseGuards, type DynamicModule } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimitModule, SlidingLimit, SlidingLimitGuard, SlidingWindowLimiter } from 'nestjs-sliding-limit';
import { RATE_LIMIT_CONNECTION } from '../../lib/nest/rate-limit.constants';
import { RateLimitTestingModule } from 'nestjs-sliding-limit/testing';
import type { RateLimitConnection } from '../../lib/nest/rate-limit-connection';

@Controller('login')
class LoginController {
  @Get()
  @SlidingLimit({ name: 'login', limit: 2, windowMs: 60_000 })
  login(): string {
    return 'ok';
  }
}

/** An application's own module: its Redis (here an address where nothing listens) must never be used. */
function appModule(rateLimit: DynamicModule): DynamicModule {
  @Module({
    imports: [ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true }), rateLimit],
    controllers: [LoginController],
  })
  class AppModule {}
  return { module: AppModule };
}

const DEAD_REDIS = 'redis://127.0.0.1:1';

describe('RateLimitTestingModule.override: a whole AppModule on the in-memory store', () => {
  it.each([
    ['forRoot', RateLimitModule.forRoot({ redis: DEAD_REDIS, loadFunctions: 'verify' })],
    [
      'forRootAsync with ConfigService',
      RateLimitModule.forRootAsync({
        inject: [ConfigService],
        useFactory: (config: ConfigService) => ({
          redis: config.get<string>('REDIS_URL') || DEAD_REDIS,
          loadFunctions: 'verify' as const,
        }),
      }),
    ],
  ])('%s: limits on the test clock, and no Redis connection at all', async (_, rateLimit) => {
    const { builder, clock, backend } = RateLimitTestingModule.override(
      Test.createTestingModule({ imports: [appModule(rateLimit)] }),
    );
    const app = (await builder.compile()).createNestApplication({ logger: false });
    await app.init();
    try {
      expect(app.get<RateLimitConnection>(RATE_LIMIT_CONNECTION).client).toBeUndefined();
      await request(app.getHttpServer()).get('/login').expect(200);
      await request(app.getHttpServer()).get('/login').expect(200);
      await request(app.getHttpServer()).get('/login').expect(429);
      expect(backend.keys()).toEqual(['rl:login:{ip:127.0.0.1}']);
      clock.advance(60_000);
      await request(app.getHttpServer()).get('/login').expect(200);
    } finally {
      await app.close();
    }
  });

  it('runs on the application’s own options, replacing only the store and the clock', async () => {
    @Controller('guarded')
    @UseGuards(SlidingLimitGuard)
    class GuardedController {
      @Get()
      guarded(): string {
        return 'ok';
      }
    }
    @Module({
      imports: [
        RateLimitModule.forRoot({
          redis: DEAD_REDIS,
          functionName: 'sliding_allow_v2',
          global: false,
          headers: 'draft',
          refusals: { body: 'problem' },
          keyPrefix: 'app:',
          key: 'header:x-client',
          defaultLimit: { name: 'default', limit: 1, windowMs: 60_000 },
        }),
      ],
      controllers: [LoginController, GuardedController],
    })
    class AppModule {}
    const { builder, backend } = RateLimitTestingModule.override(Test.createTestingModule({ imports: [AppModule] }));
    const app = (await builder.compile()).createNestApplication({ logger: false });
    await app.init();
    try {
      expect(app.get(SlidingWindowLimiter).functionName).toBe('sliding_allow_v2');
      // global: false: the limited route without @UseGuards is not limited.
      for (let i = 0; i < 3; i++) await request(app.getHttpServer()).get('/login').expect(200);
      // The guarded route gets the defaultLimit, keyed by the app's key, under its prefix, with its headers and body.
      const admitted = await request(app.getHttpServer()).get('/guarded').set('x-client', 'c1').expect(200);
      expect(admitted.headers['ratelimit-policy']).toBe('"default";q=1;w=60');
      expect(admitted.headers['x-ratelimit-limit']).toBeUndefined();
      const refused = await request(app.getHttpServer()).get('/guarded').set('x-client', 'c1').expect(429);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(backend.keys()).toEqual(['app:default:{header.x-client:c1}']);
    } finally {
      await app.close();
    }
  });

  it('starts an application on sliding_allow_v2 whose routes have a cost', async () => {
    @Controller('export')
    class ExportController {
      @Get()
      @SlidingLimit({ name: 'export', limit: 30, windowMs: 60_000, cost: 10 })
      export(): string {
        return 'ok';
      }
    }
    @Module({
      imports: [RateLimitModule.forRoot({ redis: DEAD_REDIS, functionName: 'sliding_allow_v2' })],
      controllers: [ExportController],
    })
    class AppModule {}
    const { builder } = RateLimitTestingModule.override(Test.createTestingModule({ imports: [AppModule] }));
    const app = (await builder.compile()).createNestApplication({ logger: false });
    await app.init();
    try {
      const exported = await request(app.getHttpServer()).get('/export').expect(200);
      expect(exported.headers['x-ratelimit-remaining']).toBe('20');
    } finally {
      await app.close();
    }
  });

  it('lets the testing options (headers, key prefix) win over the application’s', async () => {
    const { builder, backend } = RateLimitTestingModule.override(
      Test.createTestingModule({
        imports: [appModule(RateLimitModule.forRoot({ redis: DEAD_REDIS, headers: 'legacy', keyPrefix: 'app:' }))],
      }),
      { headers: 'draft', keyPrefix: 't:' },
    );
    const app = (await builder.compile()).createNestApplication({ logger: false });
    await app.init();
    try {
      const answer = await request(app.getHttpServer()).get('/login').expect(200);
      expect(answer.headers['ratelimit-policy']).toBe('"login";q=2;w=60');
      expect(answer.headers['x-ratelimit-limit']).toBeUndefined();
      expect(backend.keys()).toEqual(['t:login:{ip:127.0.0.1}']);
    } finally {
      await app.close();
    }
  });
});
