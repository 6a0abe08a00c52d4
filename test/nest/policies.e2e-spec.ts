import { Logger } from '@nestjs/common';
import {
  RateLimitConfigError,
  RateLimitUsage,
  SlidingWindowLimiter,
  type RateLimitUsageReport,
} from 'nestjs-sliding-limit';
import {
  FunctionPolicyController,
  PlanPolicy,
  PhoneCodesController,
  PlanService,
  PlansController,
  ShadowController,
  UndecoratedController,
  UnprovidedPolicyController,
} from '../fixtures/policies/policies.controllers';
import { RedisOverridesStore } from '../../lib/redis/overrides-store';
import { PLATFORMS, startTestApp, testRateLimitModule, useTestApps } from '../support/nest-app';
import { rejectionOf } from '../support/rejection';
import { connectShared, uniquePrefix } from '../support/test-redis';

/*
 * Limits as data through the guard: a policy resolved once per request gives each caller its tier's
 * limits (headers included), a plan change applies on the next request with the history kept, a
 * failing policy falls back or answers 503 — said once — and shadow limits and candidates never refuse.
 */
describe.each(PLATFORMS)('policies and shadow limits through the guard on %s', (platform) => {
  const startApp = useTestApps();
  afterEach(() => jest.restoreAllMocks());

  const start = async () => {
    const app = await startApp({
      platform,
      controllers: [PlansController, FunctionPolicyController, ShadowController],
      providers: [PlanService, PlanPolicy],
      options: { headers: { style: 'both', shadow: true } },
    });
    return { app, plans: app.app.get(PlanService) };
  };

  it("gives each caller its tier's limits, resolving the policy once per request, and says so in the headers", async () => {
    const { app, plans } = await start();
    plans.plans.set('pro-key', 'pro');
    const free = await app.http().get('/api/items').set('x-api-key', 'free-key').expect(200);
    expect(plans.lookups).toBe(1);
    expect(free.headers['x-ratelimit-limit']).toBe('3');
    expect(free.headers['x-ratelimit-remaining']).toBe('2');
    expect(free.headers['ratelimit-policy']).toBe('"free.api-minute";q=3;w=60, "free.api-hour";q=5;w=3600');
    const pro = await app.http().get('/api/items').set('x-api-key', 'pro-key').expect(200);
    expect(plans.lookups).toBe(2);
    expect(pro.headers['x-ratelimit-limit']).toBe('6');
    expect(pro.headers['ratelimit-policy']).toBe('"pro.api-minute";q=6;w=60, "pro.api-hour";q=100;w=3600');

    const fn = await app.http().get('/fn').set({ 'x-api-key': 'a', 'x-tier': 'gold' }).expect(200);
    expect(fn.headers['ratelimit-policy']).toBe('"gold";q=3;w=60');
  });

  it('applies a plan change on the next request, keeping the history both ways', async () => {
    const { app, plans } = await start();
    const key = { 'x-api-key': 'mover' };
    for (let i = 0; i < 3; i++) await app.http().get('/api/items').set(key).expect(200);
    await app.http().get('/api/items').set(key).expect(429);
    plans.plans.set('mover', 'pro');
    const upgraded = await app.http().get('/api/items').set(key).expect(200);
    // 3 counted before, this one the 4th of pro's 6 per minute.
    expect(upgraded.headers['x-ratelimit-remaining']).toBe('2');
    await app.http().get('/api/items').set(key).expect(200);
    plans.plans.set('mover', 'free');
    // 5 counted: over free's 3 per minute and at its 5 per hour (the header shows the limit that resets last).
    const downgraded = await app.http().get('/api/items').set(key).expect(429);
    expect(downgraded.headers['ratelimit-policy']).toBe('"free.api-minute";q=3;w=60, "free.api-hour";q=5;w=3600');
    expect(downgraded.headers['x-ratelimit-limit']).toBe('5');
  });

  it('falls back to the decorator values when the policy fails, says so once, and answers 503 without them', async () => {
    const { app, plans } = await start();
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    plans.failing = new Error('plan database is down');
    const key = { 'x-api-key': 'k' };
    const first = await app.http().get('/api/items').set(key).expect(200);
    // The fallback values: 2 per minute, 4 per hour, named as the limits themselves.
    expect(first.headers['x-ratelimit-limit']).toBe('2');
    expect(first.headers['ratelimit-policy']).toBe('"api-minute";q=2;w=60, "api-hour";q=4;w=3600');
    await app.http().get('/api/items').set(key).expect(200);
    await app.http().get('/api/items').set(key).expect(429);
    const unavailable = await app.http().get('/api/reports').set(key).expect(503);
    expect(unavailable.headers['retry-after']).toBe('1');
    const lines = warn.mock.calls.map(([line]) => String(line));
    expect(lines.filter((line) => line.includes('PlansController.items'))).toEqual([
      'PlansController.items: rate-limit policy PlanPolicy failed (it threw: plan database is down); its limits ' +
        'apply their own values ("api-minute" 2 per 60000 ms, "api-hour" 4 per 3600000 ms). Said once until the policy answers again',
    ]);
    expect(lines.some((line) => line.includes('PlansController.reports') && line.includes('answered 503'))).toBe(true);

    // Answers again, then answers nonsense: said again, once.
    plans.failing = undefined;
    await app.http().get('/api/items').set({ 'x-api-key': 'other' }).expect(200);
    plans.answer = { name: 'free', limit: -1 };
    await app.http().get('/api/items').set({ 'x-api-key': 'third' }).expect(200);
    await app.http().get('/api/items').set({ 'x-api-key': 'third' }).expect(200);
    const again = warn.mock.calls
      .map(([line]) => String(line))
      .filter((line) => line.includes('PlansController.items'));
    expect(again).toHaveLength(2);
    expect(again[1]).toContain('makes no valid limit (limit -1, windowMs 60000)');
  });

  it("takes the module's defaultLimit values from a policy too, per caller", async () => {
    const app = await startApp({
      platform,
      controllers: [UndecoratedController],
      providers: [PlanService, PlanPolicy],
      options: {
        headers: 'both',
        defaultLimit: { name: 'default-plan', policy: PlanPolicy, windowMs: 60_000, key: 'header:x-api-key' },
      },
    });
    app.app.get(PlanService).plans.set('pro-default', 'pro');
    const free = [];
    for (let i = 0; i < 3; i++) free.push(await app.http().get('/undecorated').set('x-api-key', 'free-default'));
    expect(free.map((response) => response.status)).toEqual([200, 200, 429]);
    expect(free[0].headers['ratelimit-policy']).toBe('"free";q=2;w=60');
    const pro = await app.http().get('/undecorated').set('x-api-key', 'pro-default').expect(200);
    expect(pro.headers['x-ratelimit-limit']).toBe('20');
    expect(pro.headers['ratelimit-policy']).toBe('"pro";q=20;w=60');
  });

  it('never refuses for a shadow limit or a candidate, and reports what they would have refused', async () => {
    const { app } = await start();
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const key = { 'x-api-key': 'trial' };
    const responses = [];
    for (let i = 0; i < 4; i++) responses.push(await app.http().get('/shadow').set(key).expect(200));
    // A shadow limit alone sets no X-RateLimit-* (it limits nothing), only x-ratelimit-shadow.
    expect(responses[0].headers['x-ratelimit-limit']).toBeUndefined();
    expect(responses.map((r) => r.headers['x-ratelimit-shadow'])).toEqual([
      '"trial";q=2;r=1;w=60;would-refuse=?0',
      '"trial";q=2;r=0;w=60;would-refuse=?0',
      '"trial";q=2;r=0;w=60;would-refuse=?1',
      '"trial";q=2;r=0;w=60;would-refuse=?1',
    ]);
    const lines = log.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('shadow limit'));
    // Sampled: one line for the two would-be refusals within a minute.
    expect(lines).toEqual([
      'shadow limit "trial" (2 per window) would have refused 1 request, the latest on ShadowController.get; ' +
        "admitted, as a shadow limit never refuses (promote it with mode: 'enforced')",
    ]);

    // The candidate (1 per minute) beside the free tier's 2 of /api/reports.
    const reports = [];
    for (let i = 0; i < 3; i++) reports.push(await app.http().get('/api/reports').set(key));
    expect(reports.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(reports[1].headers['x-ratelimit-shadow']).toBe('"reports.candidate";q=1;r=0;w=60;would-refuse=?1');
    expect(reports[1].headers['ratelimit-policy']).toBe('"free";q=2;w=60');
    // Refused by the enforced limit: its Retry-After, and the candidate is not among the refusing limits.
    expect(reports[2].body.message).not.toContain('candidate');
  });

  it("gives a candidate its tier's values from the policy's limits, by the candidate's name", async () => {
    const { app, plans } = await start();
    plans.plans.set('pro-trial', 'pro');
    const key = { 'x-api-key': 'pro-trial' };
    const shadow = [];
    for (let i = 0; i < 4; i++) {
      shadow.push((await app.http().get('/api/reports').set(key).expect(200)).headers['x-ratelimit-shadow']);
    }
    // Pro's 20 per minute are enforced; its candidate tries 3, where free callers' tries 1.
    expect(shadow).toEqual([
      '"reports.candidate";q=3;r=2;w=60;would-refuse=?0',
      '"reports.candidate";q=3;r=1;w=60;would-refuse=?0',
      '"reports.candidate";q=3;r=0;w=60;would-refuse=?0',
      '"reports.candidate";q=3;r=0;w=60;would-refuse=?1',
    ]);
  });

  it('applies a per-key override set at runtime to the next request, in the headers too', async () => {
    const { app } = await start();
    const key = { 'x-api-key': 'vip' };
    await app.http().get('/fn').set(key).expect(200);
    await app.http().get('/fn').set(key).expect(429);
    const redis = connectShared();
    try {
      const overrides = new RedisOverridesStore(redis, { keyPrefix: app.keyPrefix });
      await overrides.set('fn:{header.x-api-key:vip}', { action: 'limit', limit: 5 }, { ttlMs: 60_000 });
      const raised = await app.http().get('/fn').set(key).expect(200);
      expect(raised.headers['x-ratelimit-limit']).toBe('5');
      expect(raised.headers['ratelimit-policy']).toBe('"basic";q=5;w=60');
    } finally {
      await redis.quit();
    }
    expect(app.app.get(SlidingWindowLimiter).functionName).toBe('sliding_allow_v2');
  });
});

describe('bootstrap checks of policies', () => {
  afterEach(() => jest.restoreAllMocks());

  it('refuses a policy class no module provides, naming the route and the fix', async () => {
    const error = await rejectionOf(startTestApp({ platform: 'express', controllers: [UnprovidedPolicyController] }));
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect(String((error as Error).message)).toContain(
      'UnprovidedPolicyController.get: @SlidingLimit policy PlanPolicy is not a provider: add it to the providers of a module',
    );
  });

  it('refuses shadow limits on sliding_allow_v1, which would enforce them', async () => {
    const error = await rejectionOf(
      startTestApp({
        platform: 'express',
        controllers: [ShadowController],
        options: { functionName: 'sliding_allow_v1' },
      }),
    );
    expect(String((error as Error).message)).toContain(
      "ShadowController.get: a shadow limit (mode: 'shadow', a candidate, or limitMode: 'shadow') needs sliding_allow_v2",
    );
  });
});

describe.each(PLATFORMS)('the usage answer on %s', (platform) => {
  const startApp = useTestApps();
  afterEach(() => jest.restoreAllMocks());

  const start = async (usage: boolean | { path?: string; names?: string[] } = true) => {
    const keyPrefix = uniquePrefix('usage');
    const app = await startApp({
      platform,
      controllers: [PlansController, FunctionPolicyController, PhoneCodesController],
      providers: [PlanService, PlanPolicy],
      options: { keyPrefix },
      rateLimitModule: testRateLimitModule({ keyPrefix, headers: 'both', usage }),
    });
    return { app, plans: app.app.get(PlanService) };
  };

  it("answers the caller's named limits as its headers say them, consuming nothing", async () => {
    const { app, plans } = await start();
    plans.plans.set('pro-key', 'pro');
    const key = { 'x-api-key': 'pro-key' };
    const last = await app.http().get('/api/items').set(key).expect(200);
    await app.http().get('/api/items').set(key).expect(200);
    const usage = await app.http().get('/rate_limit').set(key).expect(200);
    const again = await app.http().get('/rate_limit').set(key).expect(200);
    expect(again.body).toEqual(usage.body);
    expect(usage.headers['x-ratelimit-limit']).toBeUndefined();
    const { limits } = usage.body as RateLimitUsageReport;
    expect(Object.keys(limits)).toEqual(['api-hour', 'api-minute', 'fn', 'reports', 'reports.candidate']);
    expect(limits['api-minute']).toMatchObject({
      policy: 'pro.api-minute',
      limit: 6,
      remaining: 4,
      used: 2,
      windowMs: 60_000,
    });
    expect(limits['api-hour']).toMatchObject({ policy: 'pro.api-hour', limit: 100, remaining: 98, used: 2 });
    expect(limits.reports).toMatchObject({ policy: 'pro', limit: 20, remaining: 20, used: 0 });
    // The candidate's pro value, from the policy's limits by the candidate's name.
    expect(limits['reports.candidate']).toMatchObject({ limit: 3, remaining: 3, shadow: true });
    // The headers of the next request say what the usage said, less that request.
    const next = await app.http().get('/api/items').set(key).expect(200);
    expect(Number(next.headers['x-ratelimit-remaining'])).toBe(limits['api-minute'].remaining - 1);
    expect(Number(last.headers['x-ratelimit-remaining'])).toBe(limits['api-minute'].remaining + 1);
  });

  it('serves another path; a request without an API key sees the limits of its IP', async () => {
    const { app } = await start({ path: 'me/quota' });
    await app.http().get('/rate_limit').expect(404);
    const usage = await app.http().get('/me/quota').expect(200);
    // Without an API key the header-keyed limits fall back to the IP: still the caller's own.
    expect(Object.keys((usage.body as RateLimitUsageReport).limits)).toContain('api-minute');
  });

  it('leaves out, saying so once, the limits whose keys any caller can name, unless told their names', async () => {
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const { app } = await start();
    const phone = { phone: '13800000001' };
    await app.http().post('/codes').send(phone).expect(201);
    for (let i = 0; i < 2; i++) {
      const usage = await app.http().get('/rate_limit').send(phone).expect(200);
      expect(Object.keys((usage.body as RateLimitUsageReport).limits)).not.toContain('code-phone');
    }
    // code-phone is also keyed by the caller's API key (GET /codes/sent): any route keying it by a
    // value anyone can name leaves it out for everyone.
    const key = { 'x-api-key': 'own-key' };
    await app.http().get('/codes/sent').set(key).expect(200);
    const keyed = await app.http().get('/rate_limit').set(key).expect(200);
    expect(Object.keys((keyed.body as RateLimitUsageReport).limits)).not.toContain('code-phone');
    const said = log.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('leaves out'));
    expect(said).toEqual([expect.stringContaining('GET /rate_limit leaves out "code-phone": any caller can name')]);
    await app.close();

    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const named = (await start({ names: ['code-phone', 'code-phon'] })).app;
    expect(warn.mock.calls.map(([line]) => String(line))).toEqual([
      expect.stringContaining('GET /rate_limit: usage.names "code-phon" name no @SlidingLimit of this application'),
    ]);
    await named.http().post('/codes').send(phone).expect(201);
    // (Fastify parses no GET body: the phone's key falls back to the IP there, a limit all the same.)
    const usage = await named.http().get('/rate_limit').send(phone).expect(200);
    expect((usage.body as RateLimitUsageReport).limits).toEqual({
      'code-phone': expect.objectContaining({ policy: 'code-phone', limit: 2, windowMs: 60_000 }),
    });
  });

  it('is injectable, with a filter of names', async () => {
    const { app } = await start(false);
    const usage = app.app.get(RateLimitUsage);
    const report = await usage.of({ headers: { 'x-api-key': 'k' }, ip: '10.0.0.1' }, { names: ['fn'] });
    expect(report.limits).toEqual({
      fn: { policy: 'basic', limit: 1, remaining: 1, used: 0, reset: 0, windowMs: 60_000 },
    });
  });
});
