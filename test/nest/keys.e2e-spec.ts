import { INSTANCE_REPORT_KEY_PART } from '../../lib/core/instance-report';
import { FakeAuthModule } from '../fixtures/limits/fake-auth.middleware';
import { KeysController, SmsController } from '../fixtures/limits/limits.controllers';
import { PLATFORMS, startTestApp, type TestApp } from '../support/nest-app';
import { connectShared } from '../support/test-redis';

describe.each(PLATFORMS)('keys on %s', (platform) => {
  let app: TestApp | undefined;
  const redis = connectShared();
  afterAll(() => redis.quit());
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  // The limiter keys under the app's prefix (the instance report lives there too: it is not a limit).
  const keysOf = async (testApp: TestApp) =>
    (await redis.keys(`${testApp.keyPrefix}*`))
      .map((k) => k.slice(testApp.keyPrefix.length))
      .filter((k) => !k.startsWith(INSTANCE_REPORT_KEY_PART))
      .sort();
  const start = (trustProxy = false) =>
    startTestApp({ platform, controllers: [KeysController, SmsController], imports: [FakeAuthModule], trustProxy });

  it("counts per client IP by default, in the articles' key shape", async () => {
    app = await start();
    await app.http().get('/keys/ip').expect(200);
    expect(await keysOf(app)).toEqual(['by-ip:{ip:127.0.0.1}']);
  });

  it('ignores X-Forwarded-For unless the app trusts its proxy', async () => {
    app = await start(false);
    await app.http().get('/keys/ip').set('X-Forwarded-For', '203.0.113.1').expect(200);
    await app.http().get('/keys/ip').set('X-Forwarded-For', '203.0.113.2').expect(200);
    await app.http().get('/keys/ip').set('X-Forwarded-For', '203.0.113.3').expect(429);
    await app.close();

    app = await start(true);
    for (const ip of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      const res = await app.http().get('/keys/ip').set('X-Forwarded-For', ip).expect(200);
      expect(res.body).toEqual({ ip });
    }
    expect(await keysOf(app)).toEqual(['by-ip:{ip:203.0.113.1}', 'by-ip:{ip:203.0.113.2}', 'by-ip:{ip:203.0.113.3}']);
  });

  it('counts per user, and anonymous requests per IP in their own namespace', async () => {
    app = await start();
    await app.http().get('/keys/user').set('x-user-id', '10086').expect(200);
    await app.http().get('/keys/user').set('x-user-id', '10086').expect(200);
    await app.http().get('/keys/user').set('x-user-id', '10086').expect(429);
    // Same IP, other user: a bucket of its own; anonymous: never a bucket shared by everyone.
    await app.http().get('/keys/user').set('x-user-id', '10087').expect(200);
    await app.http().get('/keys/user').expect(200);
    expect(await keysOf(app)).toEqual(['order:{no-user:ip:127.0.0.1}', 'order:{user:10086}', 'order:{user:10087}']);
  });

  it('gives key and cost functions the user a middleware set, as req.user', async () => {
    app = await start();
    const first = await app.http().get('/keys/user-fn').set('x-user-id', '10086').expect(200);
    expect(first.headers['x-ratelimit-remaining']).toBe('5'); // 10 less a cost of 5
    await app.http().get('/keys/user-fn').set('x-user-id', '10086').expect(200);
    await app.http().get('/keys/user-fn').set('x-user-id', '10086').expect(429);
    expect(await keysOf(app)).toEqual(['by-user-fn:{10086}']);
  });

  it('reads route params, headers, body fields, the route and a key function', async () => {
    app = await start();
    await app.http().get('/keys/param/138').expect(200);
    await app.http().get('/keys/param/138').expect(429);
    await app.http().get('/keys/param/139').expect(200);
    await app.http().get('/keys/header').set('x-api-key', 'k1').expect(200);
    await app.http().get('/keys/header').set('x-api-key', 'k1').expect(429);
    await app.http().get('/keys/route').expect(200);
    await app.http().get('/keys/route-too').expect(200); // same name, different route part
    await app.http().get('/keys/fn').set('x-tenant', 'acme').expect(200);
    await app.http().get('/keys/fn').set('x-tenant', 'acme').expect(429);
    await app.http().get('/keys/global').expect(200);
    expect(await keysOf(app)).toEqual([
      'by-fn:{acme}',
      'by-header:{header.x-api-key:k1}',
      'by-param:{param.phone:138}',
      'by-param:{param.phone:139}',
      'everyone:{global}',
      'shared:{route:KeysController.route:ip:127.0.0.1}',
      'shared:{route:KeysController.routeToo:ip:127.0.0.1}',
    ]);
  });

  it('survives hostile request values without crashing or sharing a bucket', async () => {
    app = await start();
    await app
      .http()
      .post('/sms/code')
      .send({ phone: { $ne: 1 } })
      .expect(201);
    await app
      .http()
      .post('/sms/code')
      .send({ phone: ['1', '2'] })
      .expect(429); // still that IP's fallback bucket
    await app.http().post('/sms/code').send({ phone: 'a{b} c%' }).expect(201);
    await app
      .http()
      .post('/sms/code')
      .send({ phone: 'x'.repeat(500) })
      .expect(201);
    await app
      .http()
      .post('/sms/code')
      .set('content-type', 'text/plain')
      .send('nonsense')
      .expect((res) => {
        expect([201, 415, 429]).toContain(res.status);
      });
    const keys = await keysOf(app);
    expect(keys).toContain('sms-minute:{no-body.phone:ip:127.0.0.1}');
    expect(keys).toContain('sms-minute:{body.phone:a%7Bb%7D%20c%25}');
    expect(keys.some((k) => /^sms-day:\{body\.phone:%sha256\.[0-9a-f]{64}\}$/.test(k))).toBe(true);
  });
});
