import { RateLimitConfigError, RateLimitModule } from 'nestjs-sliding-limit';
import { BadClassController, FineController, UsersController } from '../fixtures/bad-decorators/bad.controllers';
import { startRedisServer } from '../support/redis-server';
import { startTestApp } from '../support/nest-app';
import { sharedRedisUrl } from '../support/test-redis';
import { rejectionOf } from '../support/rejection';

describe('bootstrap errors', () => {
  it('fails app.init() on bad @SlidingLimit arguments, naming controller and handler', async () => {
    const error = await rejectionOf(
      startTestApp({ platform: 'express', controllers: [UsersController, BadClassController, FineController] }),
    );
    expect(error).toBeInstanceOf(RateLimitConfigError);
    const message = (error as Error).message;
    for (const expected of [
      'UsersController.login: @SlidingLimit.limit must be a whole number from 1 to 1000000, got 0',
      'UsersController.negative: @SlidingLimit.limit must be a whole number from 1 to 1000000, got -1',
      'UsersController.fraction: @SlidingLimit.limit must be a whole number from 1 to 1000000, got 1.5',
      'UsersController.nan: @SlidingLimit.limit must be a whole number from 1 to 1000000, got NaN',
      'UsersController.string: @SlidingLimit.limit must be a whole number from 1 to 1000000, got "5"',
      'UsersController.window: @SlidingLimit.windowMs must be a whole number of milliseconds',
      'UsersController.missing: @SlidingLimit.limit must be',
      'UsersController.missing: @SlidingLimit.windowMs must be',
      'UsersController.key: @SlidingLimit.key "usr:id": unknown part "usr:id"',
      'UsersController.twins: two unnamed @SlidingLimit have the same window (1000 ms); give them distinct names',
      'BadClassController: @SlidingLimit.name must be 1 to 64 letters',
    ]) {
      expect(message).toContain(expected);
    }
    expect(message).not.toContain('FineController');
    // Reported once, not once per handler of the class.
    expect(message.split('BadClassController:').length).toBe(2);
  });

  it('reports every bad module option together, each by name', async () => {
    const error = await rejectionOf(
      startTestApp({
        platform: 'express',
        rateLimitModule: RateLimitModule.forRoot({
          redis: 'localhost:6379',
          headers: 'fancy' as never,
          refusals: { body: 'html' as never },
          functionName: 'sliding_allow_v9',
          key: 'body:',
          defaultLimit: { limit: 0, windowMs: 1000 },
        }),
      }),
    );
    expect(error).toBeInstanceOf(RateLimitConfigError);
    const problems = (error as RateLimitConfigError).problems.join('\n');
    expect(problems).toContain('redis must be a redis:// or rediss:// URL, got "localhost:6379"');
    expect(problems).toContain('headers must be one of legacy, draft, both, none, got "fancy"');
    expect(problems).toContain('refusals.body must be one of nest, problem, got "html"');
    expect(problems).toContain('functionName "sliding_allow_v9" is not a shipped function');
    expect(problems).toContain('key "body:": part "body:"');
    expect(problems).toContain('defaultLimit.limit must be a whole number');
  });

  it('requires exactly one of redis and client', async () => {
    const error = await rejectionOf(
      startTestApp({ platform: 'express', rateLimitModule: RateLimitModule.forRoot({}) }),
    );
    expect((error as Error).message).toContain('set redis');
  });

  it("fails app.init() when loadFunctions is 'verify' and the function is not loaded", async () => {
    const server = await startRedisServer(); // a fresh server: nothing loaded
    try {
      const error = await rejectionOf(
        startTestApp({
          platform: 'express',
          controllers: [FineController],
          rateLimitModule: RateLimitModule.forRoot({ redis: server.url, loadFunctions: 'verify' }),
        }),
      );
      expect((error as Error).message).toMatch(/not loaded/);
    } finally {
      await server.stop();
    }
  });

  it('starts with valid decorators', async () => {
    const app = await startTestApp({
      platform: 'fastify',
      controllers: [FineController],
      options: { redis: sharedRedisUrl() },
    });
    await app.http().get('/fine').expect(200);
    await app.close();
  });
});
