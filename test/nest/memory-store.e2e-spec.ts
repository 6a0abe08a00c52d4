import { Controller, Get, Logger } from '@nestjs/common';
import { RateLimitConfigError, RateLimitModule, SlidingLimit } from 'nestjs-sliding-limit';
import { manualClock, PLATFORMS, startTestApp, useTestApps } from '../support/nest-app';
import { rejectionOf } from '../support/rejection';

@Controller('mem')
class MemoryController {
  @Get('login')
  @SlidingLimit({ name: 'login', limit: 5, windowMs: 60_000 })
  login(): string {
    return 'ok';
  }

  @Get('sms')
  @SlidingLimit({ name: 'sms-minute', limit: 1, windowMs: 60_000 })
  @SlidingLimit({ name: 'sms-day', limit: 3, windowMs: 86_400_000, precisionMs: 3_600_000 })
  sms(): string {
    return 'ok';
  }

  @Get('export')
  @SlidingLimit({ name: 'export', limit: 30, windowMs: 60_000, cost: 10 })
  export(): string {
    return 'ok';
  }
}

/** `store: 'memory'`: the module without Redis, for one process. */
describe.each(PLATFORMS)("store: 'memory' on %s", (platform) => {
  const startApp = useTestApps();
  afterEach(() => jest.restoreAllMocks());

  const start = async (functionName?: string) => {
    const clock = manualClock();
    const app = await startApp({
      platform,
      controllers: [MemoryController],
      rateLimitModule: RateLimitModule.forRoot({ store: 'memory', clock: clock.now, functionName }),
    });
    return { app, clock };
  };

  it('limits with the same headers and 429s as on Redis, and says at start-up that limits are per process', async () => {
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const { app, clock } = await start();
    expect(log.mock.calls.map(([line]) => String(line)).join('\n')).toContain(
      "Rate limits are kept in this process's memory (store: 'memory')",
    );
    for (let i = 0; i < 5; i++) await app.http().get('/mem/login').expect(200);
    const limited = await app.http().get('/mem/login').expect(429);
    expect(limited.headers['retry-after']).toBe('60');
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    clock.advance(60_000);
    await app.http().get('/mem/login').expect(200);
  });

  it('is exact within the process under concurrent requests', async () => {
    const { app } = await start();
    const answers = await Promise.all(Array.from({ length: 40 }, () => app.http().get('/mem/login')));
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(5);
  });

  it('decides stacked limits, the bounded-memory window and costs (sliding_allow_v2) in memory too', async () => {
    const { app, clock } = await start('sliding_allow_v2');
    await app.http().get('/mem/sms').expect(200);
    await app.http().get('/mem/sms').expect(429); // the minute limit; the day's quota is untouched
    clock.advance(60_000);
    await app.http().get('/mem/sms').expect(200);
    const exported = await app.http().get('/mem/export').expect(200);
    expect(exported.headers['x-ratelimit-remaining']).toBe('20');
  });
});

describe("store: 'memory' options", () => {
  it.each([
    [{ store: 'memory', redis: 'redis://127.0.0.1:6379' }, 'set only one of redis, client, backend and store'],
    [{ store: 'disk' }, "store must be 'memory' or { type: 'memory', maxKeys }, got \"disk\""],
    [{ store: { type: 'memory', maxKeys: 0 } }, 'store.maxKeys must be a whole number ≥ 1, got 0'],
    [{}, "or store: 'memory' for limits kept in this process"],
  ])('%p: fails bootstrap naming the option', async (options, message) => {
    const error = await rejectionOf(
      startTestApp({ platform: 'express', rateLimitModule: RateLimitModule.forRoot(options as never) }),
    );
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as Error).message).toContain(message);
  });
});
