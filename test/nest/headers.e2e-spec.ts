import { InCodeLimitController } from '../fixtures/limits/in-code-limit.controller';
import { AuthController, SmsController } from '../fixtures/limits/limits.controllers';
import { manualClock, PLATFORMS, startTestApp, useTestApps } from '../support/nest-app';

describe.each(PLATFORMS)('headers and 429 on %s', (platform) => {
  const startApp = useTestApps();

  const start = async (options: Parameters<typeof startTestApp>[0]['options'] = {}) => {
    const clock = manualClock();
    const app = await startApp({
      platform,
      controllers: [AuthController, SmsController, InCodeLimitController],
      options: { clock: clock.now, ...options },
    });
    return { app, clock };
  };

  it('sets X-RateLimit-* as strings on allowed requests', async () => {
    const { app } = await start();
    const res = await app.http().post('/auth/login').expect(201);
    expect(res.headers['x-ratelimit-limit']).toBe('5');
    expect(res.headers['x-ratelimit-remaining']).toBe('4');
    expect(res.headers['x-ratelimit-reset']).toBe('60');
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.headers['ratelimit-policy']).toBeUndefined();
  });

  it('sends the header names in lowercase, as HTTP/2 does (names are case-insensitive)', async () => {
    const { app } = await start({ headers: 'both' });
    const allowed = await app.http().post('/auth/login').expect(201);
    const namesOf = (response: typeof allowed): string[] =>
      (response as unknown as { res: { rawHeaders: string[] } }).res.rawHeaders.filter((_, i) => i % 2 === 0);
    expect(namesOf(allowed)).toEqual(
      expect.arrayContaining([
        'x-ratelimit-limit',
        'x-ratelimit-remaining',
        'x-ratelimit-reset',
        'ratelimit-policy',
        'ratelimit',
      ]),
    );
    for (let i = 0; i < 4; i++) await app.http().post('/auth/login').expect(201);
    const rejected = await app.http().post('/auth/login').expect(429);
    expect(namesOf(rejected)).toContain('retry-after');
    expect(
      namesOf(rejected).filter((name) => /ratelimit|retry-after/i.test(name) && name !== name.toLowerCase()),
    ).toEqual([]);
  });

  it('answers 429 with a Nest-shaped body and Retry-After in whole seconds rounded up', async () => {
    const { app, clock } = await start();
    for (let i = 0; i < 5; i++) await app.http().post('/auth/login').expect(201);

    clock.advance(500);
    const rejected = await app.http().post('/auth/login').expect(429);
    expect(rejected.body).toEqual({ statusCode: 429, message: 'Too Many Requests', error: 'Too Many Requests' });
    expect(rejected.headers['content-type']).toMatch(/^application\/json/);
    expect(rejected.headers['retry-after']).toBe('60'); // 59.5 s left: rounded up, never early
    expect(rejected.headers['x-ratelimit-remaining']).toBe('0');

    clock.advance(59_499); // 1 ms before the oldest entry leaves the window
    expect((await app.http().post('/auth/login').expect(429)).headers['retry-after']).toBe('1');

    clock.advance(1);
    await app.http().post('/auth/login').expect(201);
  });

  it('emits the IETF draft structured fields, one entry per stacked limit', async () => {
    const { app } = await start({ headers: 'draft' });
    const login = await app.http().post('/auth/login').expect(201);
    expect(login.headers['ratelimit-policy']).toBe('"login";q=5;w=60');
    expect(login.headers['ratelimit']).toBe('"login";r=4;t=60');
    expect(login.headers['x-ratelimit-limit']).toBeUndefined();

    const sms = await app.http().post('/sms/code').send({ phone: '13800000000' }).expect(201);
    expect(sms.headers['ratelimit-policy']).toBe('"sms-minute";q=1;w=60, "sms-day";q=10;w=86400');
    expect(sms.headers['ratelimit']).toBe('"sms-minute";r=0;t=60, "sms-day";r=9;t=86400');
  });

  it('with stacked limits X-RateLimit-* describe the most restrictive and Retry-After appears once', async () => {
    const { app, clock } = await start({ headers: 'both' });
    const first = await app.http().post('/sms/code').send({ phone: '1' }).expect(201);
    expect(first.headers['x-ratelimit-limit']).toBe('1');
    expect(first.headers['x-ratelimit-remaining']).toBe('0');

    clock.advance(10_000);
    const rejected = await app.http().post('/sms/code').send({ phone: '1' }).expect(429);
    expect(rejected.headers['retry-after']).toBe('50');
    expect(rejected.headers['x-ratelimit-limit']).toBe('1');
    expect(rejected.headers['ratelimit']).toBe('"sms-minute";r=0;t=50, "sms-day";r=9;t=86390');
    expect(Object.keys(rejected.headers).filter((h) => h === 'retry-after')).toHaveLength(1);
  });

  it("sends no rate-limit headers with headers: 'none', but still Retry-After on 429", async () => {
    const { app } = await start({ headers: 'none' });
    const res = await app.http().post('/sms/code').send({ phone: '2' }).expect(201);
    expect(Object.keys(res.headers).filter((h) => h.includes('ratelimit'))).toEqual([]);
    const rejected = await app.http().post('/sms/code').send({ phone: '2' }).expect(429);
    expect(rejected.headers['retry-after']).toBe('60');
  });

  it("answers an RFC 9457 problem with refusals: { body: 'problem' }", async () => {
    const { app } = await start({ refusals: { body: 'problem' } });
    await app.http().post('/sms/code').send({ phone: '3' }).expect(201);
    const rejected = await app.http().post('/sms/code').send({ phone: '3' }).expect(429);
    expect(rejected.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(rejected.text)).toEqual({
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail: 'Rate limit exceeded; retry in 60 seconds.',
    });
    expect(rejected.headers['retry-after']).toBe('60');
  });

  it.each(['nest', 'problem'] as const)(
    'adds Retry-After to a TooManyRequestsException thrown by application code (refusals.body %s)',
    async (errorBody) => {
      const { app, clock } = await start({ refusals: { body: errorBody } });
      await app.http().post('/in-code').expect(201);
      clock.advance(10_000);
      const rejected = await app.http().post('/in-code').expect(429);
      expect(rejected.headers['retry-after']).toBe('20');
      const body = JSON.parse(rejected.text) as Record<string, unknown>;
      expect(body).toMatchObject(
        errorBody === 'nest'
          ? { statusCode: 429, error: 'Too Many Requests' }
          : { status: 429, detail: 'Rate limit exceeded; retry in 20 seconds.' },
      );
    },
  );
});
