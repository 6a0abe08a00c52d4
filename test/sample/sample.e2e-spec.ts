import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import Redis from 'ioredis';
import { DEFAULT_FUNCTION_NAME, SlidingWindowLimiter, type RateLimitUsageReport } from 'nestjs-sliding-limit';
import { AppModule } from '../../sample/app.module';
import { runCli } from '../cli/run-cli';
import { startRedisServer, type RedisServer } from '../support/redis-server';

/*
 * The sample app as `npm run sample` starts it, on a redis-server of its own: each route answered
 * as the commands the sample prints (and the README) promise. The module reads REDIS_URL when a
 * test builds it (ConfigModule), so setting it in beforeAll is enough.
 */
describe('the sample app', () => {
  let server: RedisServer;
  let redis: Redis;
  let app: INestApplication;
  const environment = { ...process.env };

  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    process.env.REDIS_URL = server.url;
    delete process.env.RATE_LIMIT_FUNCTION;
  });
  // Each test gets a new app (its own limiter and block cache) on emptied data: every limit starts full.
  beforeEach(async () => {
    await redis.flushdb();
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });
  afterEach(() => app.close());
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
    process.env = environment;
  });

  const http = () => request(app.getHttpServer());
  const login = (body?: object) => {
    const call = http().post('/auth/login');
    return body === undefined ? call : call.set('content-type', 'application/json').send(body);
  };

  it('runs the package’s default function version unless RATE_LIMIT_FUNCTION names one', () => {
    expect(app.get(SlidingWindowLimiter).functionName).toBe(DEFAULT_FUNCTION_NAME);
  });

  it('login: 5 per minute per IP, then 429 with Retry-After', async () => {
    for (let i = 0; i < 5; i++) await login({ username: 'demo', password: 'demo' }).expect(200);
    const limited = await login({ username: 'demo', password: 'demo' }).expect(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('login without a body, or with a malformed one, is a 400 with a message', async () => {
    const missing = await login().expect(400);
    expect(missing.body.message).toBe('Send a JSON body with "username" and "password" strings');
    await login({ username: 42 }).expect(400);
    await http().post('/auth/login').set('content-type', 'application/json').send('{"username":').expect(400);
  });

  it('failed logins: 3 wrong passwords lock the username for 15 minutes', async () => {
    for (let i = 0; i < 3; i++) await login({ username: 'alice', password: 'nope' }).expect(401);
    const locked = await login({ username: 'alice', password: 'nope' }).expect(429);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(14 * 60);
  });

  it('sms: 1 per minute per phone number (and 10 per day); a missing phone is a 400', async () => {
    const sms = (body: object) => http().post('/sms/code').set('content-type', 'application/json').send(body);
    await sms({ phone: '13800000000' }).expect(202);
    await sms({ phone: '13800000000' }).expect(429);
    await sms({ phone: '13900000000' }).expect(202);
    await sms({}).expect(400);
  });

  it('orders: 3 per minute per user (x-user-id), anonymous callers per IP', async () => {
    for (let i = 0; i < 3; i++) await http().post('/orders').set('x-user-id', '10086').expect(201);
    await http().post('/orders').set('x-user-id', '10086').expect(429);
    await http().post('/orders').set('x-user-id', '10087').expect(201);
  });

  it('search: one global bucket of 10 per second', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, () => http().get('/search?q=redis')));
    expect(answers.filter((answer) => answer.status === 200).length).toBeLessThanOrEqual(10);
    expect(answers.some((answer) => answer.status === 429)).toBe(true);
  });

  it('health: never limited', async () => {
    for (let i = 0; i < 20; i++) await http().get('/health').expect(200);
  });

  it('quota: an export costs 10 of the hourly 10,000 per API key, a search 1', async () => {
    const exported = await http().get('/quota/export').set('x-api-key', 'demo').expect(200);
    expect(exported.headers['x-ratelimit-remaining']).toBe('9990');
    const searched = await http().get('/quota/search?q=x').set('x-api-key', 'demo').expect(200);
    expect(searched.headers['x-ratelimit-remaining']).toBe('9989');
  });

  describePlanTiers(http);

  it("reports: an override set with the README's CLI command applies to the next request", async () => {
    const reports = () => http().get('/reports').set('x-api-key', 'demo-free');
    await reports().expect(200);
    // The command README.md and the start-up lines print, on the sample's Redis.
    const key = 'reports:{header.x-api-key:demo-free}';
    const set = await runCli(['overrides', 'set', key, '--limit', '3', '--ttl', '10m', '--note', 'demo'], {
      REDIS_URL: server.url,
    });
    expect(set).toMatchObject({ code: 0, stderr: '' });
    const lowered = await reports().expect(200);
    expect(lowered.headers['x-ratelimit-limit']).toBe('3');
    expect(lowered.headers['ratelimit-policy']).toBe('"free";q=3;w=60');
    await reports().expect(200);
    await reports().expect(429);
    // Other keys keep their plan's limit.
    const other = await http().get('/reports').set('x-api-key', 'demo-pro').expect(200);
    expect(other.headers['x-ratelimit-limit']).toBe('100');
    expect((await runCli(['overrides', 'delete', key], { REDIS_URL: server.url })).code).toBe(0);
    await reports().expect(200);
  });
});

describe('the sample app without Redis', () => {
  const environment = { ...process.env };
  let app: INestApplication;
  // As main.ts starts it when no Redis answers; nothing listens at REDIS_URL: it must not be used.
  beforeAll(() => {
    process.env.RATE_LIMIT_STORE = 'memory';
    process.env.REDIS_URL = 'redis://127.0.0.1:1';
    delete process.env.RATE_LIMIT_FUNCTION;
  });
  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });
  afterEach(() => app.close());
  afterAll(() => {
    process.env = environment;
  });

  const http = () => request(app.getHttpServer());

  it('runs on the in-memory store with the same limits', async () => {
    const login = () =>
      http().post('/auth/login').set('content-type', 'application/json').send({ username: 'demo', password: 'demo' });
    for (let i = 0; i < 5; i++) await login().expect(200);
    expect(Number((await login().expect(429)).headers['retry-after'])).toBeGreaterThan(0);
    await http().get('/quota/export').set('x-api-key', 'k').expect(200);
  });

  describePlanTiers(http);
});

/**
 * The plan-tier API the README's curls show, the same on Redis and on the in-memory store: each API
 * key gets its plan's limit from PlanPolicy (free 10, pro 100 per minute), named in the headers; a
 * plan change applies to the next request; the 5-per-minute candidate never refuses but says when it
 * would; the usage endpoint says what the headers say.
 */
function describePlanTiers(http: () => ReturnType<typeof request>): void {
  const reports = (apiKey: string) => http().get('/reports').set('x-api-key', apiKey);
  const setPlan = (apiKey: string, plan: string) =>
    http().post(`/api-keys/${apiKey}/plan`).set('content-type', 'application/json').send({ plan });

  it('reports: free and pro keys get their plan’s limit per minute, named in RateLimit-Policy', async () => {
    const free = await reports('demo-free').expect(200);
    expect(free.body).toEqual({ plan: 'free', reports: [] });
    expect(free.headers['x-ratelimit-limit']).toBe('10');
    expect(free.headers['x-ratelimit-remaining']).toBe('9');
    expect(free.headers['ratelimit-policy']).toBe('"free";q=10;w=60');
    const pro = await reports('demo-pro').expect(200);
    expect(pro.headers['x-ratelimit-limit']).toBe('100');
    expect(pro.headers['x-ratelimit-remaining']).toBe('99');
    expect(pro.headers['ratelimit-policy']).toBe('"pro";q=100;w=60');
    // A key the plans do not know is on the free plan, counted on its own.
    const unknown = await reports('someone-else').expect(200);
    expect(unknown.headers['x-ratelimit-remaining']).toBe('9');
  });

  it('reports: a plan change applies to the key’s next request, its count kept both ways', async () => {
    for (let i = 0; i < 10; i++) await reports('demo-free').expect(200);
    await reports('demo-free').expect(429);
    expect((await setPlan('demo-free', 'pro').expect(200)).body).toEqual({ apiKey: 'demo-free', plan: 'pro' });
    const upgraded = await reports('demo-free').expect(200);
    expect(upgraded.headers['ratelimit-policy']).toBe('"pro";q=100;w=60');
    // The 10 counted before (the refused request counted nothing) and this one: 89 of pro's 100 left.
    expect(upgraded.headers['x-ratelimit-remaining']).toBe('89');
    await setPlan('demo-free', 'free').expect(200);
    // 11 in the window: over free's 10, refused on the next request.
    const downgraded = await reports('demo-free').expect(429);
    expect(downgraded.headers['ratelimit-policy']).toBe('"free";q=10;w=60');
    await setPlan('demo-free', 'gold').expect(400);
  });

  it('reports: the candidate of 5 per minute never refuses; x-ratelimit-shadow says from the 6th that it would', async () => {
    const answers = [];
    for (let i = 0; i < 7; i++) answers.push(await reports('demo-free').expect(200));
    expect(answers[4].headers['x-ratelimit-shadow']).toBe('"reports.candidate";q=5;r=0;w=60;would-refuse=?0');
    expect(answers[5].headers['x-ratelimit-shadow']).toBe('"reports.candidate";q=5;r=0;w=60;would-refuse=?1');
    expect(answers[6].headers['x-ratelimit-shadow']).toBe('"reports.candidate";q=5;r=0;w=60;would-refuse=?1');
    // The enforced limit counts on: the candidate is not in X-RateLimit-* or RateLimit-Policy.
    expect(answers[6].headers['x-ratelimit-remaining']).toBe('3');
    expect(answers[6].headers['ratelimit-policy']).toBe('"free";q=10;w=60');
  });

  it('rate_limit: answers the key’s limits as its headers say them, counting nothing', async () => {
    for (let i = 0; i < 3; i++) await reports('demo-free').expect(200);
    const usage = await http().get('/rate_limit').set('x-api-key', 'demo-free').expect(200);
    expect((await http().get('/rate_limit').set('x-api-key', 'demo-free').expect(200)).body).toEqual(usage.body);
    expect(usage.headers['x-ratelimit-limit']).toBeUndefined();
    const { limits } = usage.body as RateLimitUsageReport;
    // Only the limits keyed by the API key, which the sample names in usage.names (login's, by IP, is not).
    expect(Object.keys(limits)).toEqual(['api-quota', 'reports', 'reports.candidate']);
    expect(limits.reports).toMatchObject({ policy: 'free', limit: 10, remaining: 7, used: 3, windowMs: 60_000 });
    expect(limits['reports.candidate']).toMatchObject({ limit: 5, remaining: 2, used: 3, shadow: true });
    const next = await reports('demo-free').expect(200);
    expect(Number(next.headers['x-ratelimit-remaining'])).toBe(limits.reports.remaining - 1);
    // Another key's usage is its own: nothing counted.
    const other = (await http().get('/rate_limit').set('x-api-key', 'demo-pro').expect(200))
      .body as RateLimitUsageReport;
    expect(other.limits.reports).toMatchObject({ policy: 'pro', limit: 100, remaining: 100, used: 0 });
  });
}
