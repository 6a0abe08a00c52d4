import { Logger } from '@nestjs/common';
import { RateLimitConfigError } from 'nestjs-sliding-limit';
import {
  BigLogController,
  NeedsV2Controller,
  PricedController,
  QuotaController,
} from '../fixtures/cost/cost.controllers';
import { manualClock, PLATFORMS, startTestApp, useTestApps } from '../support/nest-app';
import { rejectionOf } from '../support/rejection';

describe.each(PLATFORMS)('cost and precisionMs through the guard on %s', (platform) => {
  const startApp = useTestApps();
  afterEach(() => jest.restoreAllMocks());

  const start = async () => {
    const clock = manualClock();
    const app = await startApp({
      platform,
      controllers: [QuotaController, PricedController],
      options: { clock: clock.now, functionName: 'sliding_allow_v2' },
    });
    return { app, clock };
  };

  it('charges an export 10 and a search 1 against the hourly quota, and reports remaining in cost units', async () => {
    const { app } = await start();
    const key = { 'x-api-key': 'k1' };
    const exported = await app.http().get('/api/export').set(key).expect(200);
    // The quota (25, bucketed) and the export limit (30 per minute: 3 exports) both take 10.
    expect(exported.headers['x-ratelimit-remaining']).toBe('15');
    await app.http().get('/api/export').set(key).expect(200);
    for (let i = 0; i < 5; i++) await app.http().get('/api/search').set(key).expect(200);
    const rejected = await app.http().get('/api/search').set(key).expect(429);
    expect(rejected.headers['x-ratelimit-remaining']).toBe('0');
    // The hourly quota's sub-windows leave one hour (plus up to one minute) after they were used.
    expect(Number(rejected.headers['retry-after'])).toBeGreaterThanOrEqual(3600);
    expect(Number(rejected.headers['retry-after'])).toBeLessThanOrEqual(3660);
    // Another key has its own quota.
    await app.http().get('/api/export').set({ 'x-api-key': 'k2' }).expect(200);
  });

  it('prices a request with the route cost function, and answers 400 without counting when it cannot', async () => {
    const { app } = await start();
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    await app.http().post('/rows?rows=1500').expect(201); // cost 15
    const full = await app.http().post('/rows?rows=600').expect(429); // cost 6 > 5 left
    expect(full.headers['x-ratelimit-remaining']).toBe('5');
    await app.http().post('/rows?rows=500').expect(201); // cost 5
    const missing = await app.http().post('/rows').expect(400); // NaN
    expect(missing.body.message).toBe('Rate limit of PricedController.rows cannot price this request');
    await app.http().post('/rows?rows=5000').expect(400); // 50 > the limit 20
    const threw = await app.http().post('/rows/throws').expect(400);
    expect(JSON.stringify(threw.body)).not.toContain('pricing service is down');
    expect(warn.mock.calls.map(([line]) => String(line)).join('\n')).toContain(
      'PricedController.throws cannot price a request (answered 400; said once per route): its cost function threw: pricing service is down',
    );
  });
});

describe('bootstrap checks of cost and precisionMs', () => {
  afterEach(() => jest.restoreAllMocks());

  it('refuses a cost or precisionMs on sliding_allow_v1 (the stable function or the canary), naming v2', async () => {
    const error = await rejectionOf(
      startTestApp({
        platform: 'express',
        controllers: [NeedsV2Controller],
        options: { functionName: 'sliding_allow_v1' },
      }),
    );
    expect(error).toBeInstanceOf(RateLimitConfigError);
    const problems = (error as RateLimitConfigError).problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        'NeedsV2Controller.bucketed: precisionMs needs sliding_allow_v2, but functionName is sliding_allow_v1; set functionName to sliding_allow_v2',
        'NeedsV2Controller.costly: a cost needs sliding_allow_v2, but functionName is sliding_allow_v1; set functionName to sliding_allow_v2',
      ]),
    );
    const canary = await rejectionOf(
      startTestApp({
        platform: 'express',
        controllers: [NeedsV2Controller],
        options: { functionName: 'sliding_allow_v2', canary: { functionName: 'sliding_allow_v1', percent: 5 } },
      }),
    );
    expect((canary as Error).message).toContain('but canary.functionName is sliding_allow_v1');
  });

  it('warns once per log limit past 128 entries, with its memory per key and the option that bounds it', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const app = await startTestApp({ platform: 'express', controllers: [BigLogController] });
    await app.close();
    const lines = warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('"big-log"'));
    expect(lines).toEqual([
      'limit "big-log" (1000 per 60000 ms) is a sliding window log: a full key holds 1000 entries, about 98 KB in ' +
        'Redis (~100 bytes per entry past 128); set precisionMs (e.g. 1000) for a bounded-memory window',
    ]);
  });

  it.each([
    [
      { limit: 10, windowMs: 1000, cost: 0 },
      '@SlidingLimit.cost must be a whole number from 1, or a function of the request, got 0',
    ],
    [
      { limit: 10, windowMs: 1000, cost: 11 },
      'cost 11 is more than the limit 10: such a request could never be admitted',
    ],
    [
      { limit: 10, windowMs: 60_000, precisionMs: 7 },
      '@SlidingLimit.precisionMs must be a whole number of milliseconds from 60 to windowMs',
    ],
  ])('names a bad static %p at bootstrap', async (limit, message) => {
    const { SlidingLimit } = await import('nestjs-sliding-limit');
    const { Controller, Get } = await import('@nestjs/common');
    @Controller('bad')
    class BadCostController {
      @Get()
      @SlidingLimit(limit)
      get(): string {
        return 'ok';
      }
    }
    const error = await rejectionOf(
      startTestApp({
        platform: 'express',
        controllers: [BadCostController],
        options: { functionName: 'sliding_allow_v2' },
      }),
    );
    expect((error as Error).message).toContain(message);
  });
});
