import { Injectable, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import Redis from 'ioredis';
import {
  RateLimitModule,
  SlidingWindowLimiter,
  type RateLimitModuleOptions,
  type RateLimitOptionsFactory,
} from 'nestjs-sliding-limit';
import { AuthController } from '../fixtures/limits/limits.controllers';
import { GuardedController } from '../fixtures/guards/guarded.controllers';
import { PLATFORMS, startTestApp, type TestApp } from '../support/nest-app';
import { TEST_LIMITER_SETTINGS } from '../support/test-limiter';
import { connectShared, sharedRedisUrl, uniquePrefix } from '../support/test-redis';
import { RATE_LIMIT_CONNECTION } from '../../lib/nest/rate-limit.constants';
import type { RateLimitConnection } from '../../lib/nest/rate-limit-connection';

@Injectable()
class OptionsFromClass implements RateLimitOptionsFactory {
  createRateLimitOptions(): RateLimitModuleOptions {
    return {
      ...TEST_LIMITER_SETTINGS,
      redis: sharedRedisUrl(),
      keyPrefix: uniquePrefix('use-class'),
      headers: 'draft',
    };
  }
}

@Module({ providers: [OptionsFromClass], exports: [OptionsFromClass] })
class OptionsModule {}

describe.each(PLATFORMS)('RateLimitModule on %s', (platform) => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('forRootAsync reads its options through ConfigService', async () => {
    const keyPrefix = uniquePrefix('config');
    app = await startTestApp({
      platform,
      controllers: [AuthController],
      rateLimitModule: RateLimitModule.forRootAsync({
        imports: [
          ConfigModule.forRoot({
            ignoreEnvFile: true,
            load: [
              () => ({
                REDIS_URL: sharedRedisUrl(),
                RATE_LIMIT_FUNCTION: 'sliding_allow_v1',
                RATE_LIMIT_PREFIX: keyPrefix,
              }),
            ],
          }),
        ],
        inject: [ConfigService],
        useFactory: (config: ConfigService) => ({
          redis: config.getOrThrow<string>('REDIS_URL'),
          functionName: config.get<string>('RATE_LIMIT_FUNCTION'),
          keyPrefix: config.get<string>('RATE_LIMIT_PREFIX'),
        }),
      }),
    });
    const limiter = app.app.get(SlidingWindowLimiter);
    expect(limiter.functionName).toBe('sliding_allow_v1');
    expect(limiter.keyPrefix).toBe(keyPrefix);
    expect((await app.http().post('/auth/login').expect(201)).headers['x-ratelimit-remaining']).toBe('4');
  });

  it('forRootAsync accepts useClass and useExisting', async () => {
    app = await startTestApp({
      platform,
      controllers: [AuthController],
      rateLimitModule: RateLimitModule.forRootAsync({ useClass: OptionsFromClass }),
    });
    expect((await app.http().post('/auth/login').expect(201)).headers['ratelimit-policy']).toBe('"login";q=5;w=60');
    await app.close();

    app = await startTestApp({
      platform,
      controllers: [AuthController],
      rateLimitModule: RateLimitModule.forRootAsync({ imports: [OptionsModule], useExisting: OptionsFromClass }),
    });
    expect((await app.http().post('/auth/login').expect(201)).headers['ratelimit-policy']).toBe('"login";q=5;w=60');
  });

  it('leaves an injected client open and closes the connection it created', async () => {
    const client = connectShared();
    try {
      app = await startTestApp({
        platform,
        controllers: [AuthController],
        rateLimitModule: RateLimitModule.forRoot({ client, keyPrefix: uniquePrefix() }),
      });
      await app.http().post('/auth/login').expect(201);
      await app.close();
      app = undefined;
      expect(await client.ping()).toBe('PONG');
    } finally {
      await client.quit();
    }

    app = await startTestApp({ platform, controllers: [AuthController] });
    const owned = app.app.get<RateLimitConnection>(RATE_LIMIT_CONNECTION);
    expect(owned.owned).toBe(true);
    await app.http().post('/auth/login').expect(201);
    await app.close();
    app = undefined;
    expect((owned.client as Redis).status).toBe('end');
  });

  it('keeps each key’s history when functionName switches from v1 to v2 and back', async () => {
    const keyPrefix = uniquePrefix('switch');
    const run = async (functionName: string, requests: number, expectedRemaining: string[]) => {
      app = await startTestApp({ platform, controllers: [AuthController], options: { keyPrefix, functionName } });
      expect(app.app.get(SlidingWindowLimiter).functionName).toBe(functionName);
      const remaining: string[] = [];
      for (let i = 0; i < requests; i++) {
        const res = await app.http().post('/auth/login');
        remaining.push(res.status === 429 ? '429' : res.headers['x-ratelimit-remaining']);
      }
      expect(remaining).toEqual(expectedRemaining);
      await app.close();
      app = undefined;
    };
    await run('sliding_allow_v1', 2, ['4', '3']);
    await run('sliding_allow_v2', 2, ['2', '1']);
    await run('sliding_allow_v1', 2, ['0', '429']);
  });

  it('with global: false limits only routes using @UseGuards, and a double registration counts once', async () => {
    app = await startTestApp({
      platform,
      controllers: [AuthController, GuardedController],
      options: { global: false },
    });
    for (let i = 0; i < 7; i++) await app.http().post('/auth/login').expect(201);
    expect((await app.http().get('/guarded').expect(200)).headers['x-ratelimit-remaining']).toBe('1');
    await app.close();

    app = await startTestApp({ platform, controllers: [GuardedController] }); // global guard and @UseGuards
    expect((await app.http().get('/guarded').expect(200)).headers['x-ratelimit-remaining']).toBe('1');
    await app.http().get('/guarded').expect(200);
    await app.http().get('/guarded').expect(429);
  });
});

describe('the connection RateLimitModule opens', () => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  const openedClient = (testApp: TestApp) =>
    testApp.app.get<RateLimitConnection>(RATE_LIMIT_CONNECTION).client as Redis;

  it('does not auto-pipeline (the limiter batches decisions itself) unless the redis options ask for it', async () => {
    app = await startTestApp({ platform: 'express', controllers: [AuthController] });
    expect(openedClient(app).options.enableAutoPipelining).toBe(false);
    await app.http().post('/auth/login').expect(201);
    await app.close();

    const { hostname, port } = new URL(sharedRedisUrl());
    app = await startTestApp({
      platform: 'express',
      controllers: [AuthController],
      options: { redis: { host: hostname, port: Number(port), enableAutoPipelining: true } },
    });
    expect(openedClient(app).options.enableAutoPipelining).toBe(true);
    await app.http().post('/auth/login').expect(201);
  });
});
