import { Controller, Get, Module, type DynamicModule } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  RATE_LIMIT_CONNECTION,
  RateLimitModule,
  RateLimitTestingModule,
  SlidingLimit,
  type RateLimitConnection,
} from 'nestjs-sliding-limit';

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
  @Module({ imports: [ConfigModule.forRoot({ ignoreEnvFile: true }), rateLimit], controllers: [LoginController] })
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

  it('takes the testing options (headers, key prefix) instead of the application’s', async () => {
    const { builder } = RateLimitTestingModule.override(
      Test.createTestingModule({ imports: [appModule(RateLimitModule.forRoot({ redis: DEAD_REDIS }))] }),
      { headers: 'draft', keyPrefix: 't:' },
    );
    const app = (await builder.compile()).createNestApplication({ logger: false });
    await app.init();
    try {
      const answer = await request(app.getHttpServer()).get('/login').expect(200);
      expect(answer.headers['ratelimit-policy']).toBe('"login";q=2;w=60');
      expect(answer.headers['x-ratelimit-limit']).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});
