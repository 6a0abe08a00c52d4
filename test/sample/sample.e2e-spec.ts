import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import Redis from 'ioredis';
import { DEFAULT_FUNCTION_NAME, SlidingWindowLimiter } from 'nestjs-sliding-limit';
import { AppModule } from '../../sample/app.module';
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
});

describe('the sample app without Redis', () => {
  const environment = { ...process.env };
  afterAll(() => {
    process.env = environment;
  });

  it('runs on the in-memory store (as main.ts starts it when no Redis answers) with the same limits', async () => {
    process.env.RATE_LIMIT_STORE = 'memory';
    process.env.REDIS_URL = 'redis://127.0.0.1:1'; // nothing listens there: it must not be used
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      const login = () =>
        request(app.getHttpServer())
          .post('/auth/login')
          .set('content-type', 'application/json')
          .send({ username: 'demo', password: 'demo' });
      for (let i = 0; i < 5; i++) await login().expect(200);
      expect(Number((await login().expect(429)).headers['retry-after'])).toBeGreaterThan(0);
      await request(app.getHttpServer()).get('/quota/export').set('x-api-key', 'k').expect(200);
    } finally {
      await app.close();
    }
  });
});
