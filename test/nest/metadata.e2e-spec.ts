import { SlidingWindowLimiter } from 'nestjs-sliding-limit';
import { ItemsController, OpenController, PlainController, SmsController } from '../fixtures/limits/limits.controllers';
import { manualClock, PLATFORMS, startTestApp, type TestApp } from '../support/nest-app';

describe.each(PLATFORMS)('decorator metadata on %s', (platform) => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('applies class limits to every handler', async () => {
    app = await startTestApp({ platform, controllers: [ItemsController] });
    for (let i = 0; i < 3; i++) await app.http().get('/items').expect(200);
    const rejected = await app.http().get('/items').expect(429);
    expect(rejected.headers['x-ratelimit-limit']).toBe('3');
  });

  it('lets a handler limit replace the class limit of the same name, keeping the others', async () => {
    app = await startTestApp({ platform, controllers: [ItemsController], options: { headers: 'draft' } });
    const res = await app.http().get('/items/1').expect(200);
    expect(res.headers['ratelimit-policy']).toBe('"ItemsController.one:86400000";q=100;w=86400, "items";q=1;w=60');
    await app.http().get('/items/1').expect(429);
    // "items" is shared by name: the handler's replacement uses the same namespace as the class limit.
    await app.http().get('/items').expect(200);
  });

  it('skips handlers and classes marked @SkipRateLimit', async () => {
    app = await startTestApp({ platform, controllers: [ItemsController, OpenController] });
    for (let i = 0; i < 5; i++) {
      const health = await app.http().get('/items/health/check').expect(200);
      expect(health.headers['x-ratelimit-limit']).toBeUndefined();
      await app.http().get('/open').expect(200);
    }
  });

  it('applies defaultLimit only to routes without @SlidingLimit', async () => {
    app = await startTestApp({
      platform,
      controllers: [PlainController, ItemsController],
      options: { defaultLimit: { limit: 2, windowMs: 60_000 } },
    });
    await app.http().get('/plain').expect(200);
    expect((await app.http().get('/plain').expect(200)).headers['x-ratelimit-limit']).toBe('2');
    await app.http().get('/plain').expect(429);
    expect((await app.http().get('/items').expect(200)).headers['x-ratelimit-limit']).toBe('3');
    await app.http().get('/items/health/check').expect(200);
  });

  it('leaves undecorated routes alone without defaultLimit', async () => {
    app = await startTestApp({ platform, controllers: [PlainController] });
    const res = await app.http().get('/plain').expect(200);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('enforces stacked limits without counting a rejected request in any of them', async () => {
    const clock = manualClock();
    app = await startTestApp({ platform, controllers: [SmsController], options: { clock: clock.now } });
    const limiter = app.app.get(SlidingWindowLimiter);
    const day = { limit: 10, windowMs: 24 * 60 * 60_000 };

    await app.http().post('/sms/code').send({ phone: '13800000000' }).expect(201);
    for (let i = 0; i < 3; i++) await app.http().post('/sms/code').send({ phone: '13800000000' }).expect(429);
    expect((await limiter.peek('sms-day:{body.phone:13800000000}', day)).count).toBe(1);

    // Nine more minutes, nine more codes: the day limit then rejects, and the minute limit is untouched.
    for (let i = 0; i < 9; i++) {
      clock.advance(60_000);
      await app.http().post('/sms/code').send({ phone: '13800000000' }).expect(201);
    }
    clock.advance(60_000);
    const rejected = await app.http().post('/sms/code').send({ phone: '13800000000' }).expect(429);
    expect(rejected.headers['x-ratelimit-limit']).toBe('10');
    expect((await limiter.peek('sms-minute:{body.phone:13800000000}', { limit: 1, windowMs: 60_000 })).count).toBe(0);
    // Another phone has its own buckets.
    await app.http().post('/sms/code').send({ phone: '13900000000' }).expect(201);
  });
});
