import Redis from 'ioredis';
import { SlidingWindowLimiter } from '../../lib';
import { startRedisServer, startRedisServerOnPort, type RedisServer } from '../support/redis-server';

/*
 * The insurance limiter: while Redis cannot decide, the decisions that would fail open are made per
 * process by the in-memory reference model, with the same sliding-window semantics.
 */
describe('insurance limiter', () => {
  let server: RedisServer;
  let client: Redis;
  const warnings: string[] = [];
  const logger = { log: () => undefined, warn: (message: string) => void warnings.push(message) };

  beforeEach(async () => {
    warnings.length = 0;
    server = await startRedisServer();
    client = new Redis(server.url, { retryStrategy: () => 50 });
    client.on('error', () => undefined);
  });
  afterEach(async () => {
    client.disconnect();
    await server.stop();
  });

  it('decides by the sliding window in memory while Redis is down, and hands back to Redis when it returns', async () => {
    let now = 1_735_660_800_000;
    const limiter = new SlidingWindowLimiter({ client, insurance: true, timeoutMs: 100, clock: () => now, logger, report: false });
    const rule = { limit: 3, windowMs: 10_000 };
    expect(await limiter.consume('k', rule)).toMatchObject({ allowed: true, remaining: 2 });
    expect((await limiter.consume('k', rule)).degraded).toBeUndefined();

    await server.stop();
    const insured = [];
    for (let i = 0; i < 5; i++) {
      insured.push(await limiter.consume('k', rule));
      now += 1000;
    }
    // The insurance starts from an empty window: it knows nothing of what Redis recorded.
    expect(insured.map((d) => [d.allowed, d.remaining, d.degraded])).toEqual([
      [true, 2, 'insurance'],
      [true, 1, 'insurance'],
      [true, 0, 'insurance'],
      [false, 0, 'insurance'],
      [false, 0, 'insurance'],
    ]);
    // Exact retry-after, as v2 on Redis would say: the oldest insured entry leaves at +10 s.
    expect(insured[4].retryAfterMs).toBe(10_000 - 4000);
    expect(await limiter.consume('k', rule, { onRedisError: 'deny' })).toMatchObject({ allowed: false, degraded: 'deny' });

    server = await startRedisServerOnPort(server.port);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const back = await limiter.consume('k', rule);
    expect(back.degraded).toBeUndefined();
    expect(limiter.metrics.snapshot()[0].fallbacks).toEqual({ insurance: 5, deny: 1 });
    expect(warnings.filter((message) => message.includes('did not decide'))).toHaveLength(1);
    limiter.close();
  });

  it("lets onRedisError: 'throw' through: RedisUnavailableError (disconnected) instead of an insured decision", async () => {
    const limiter = new SlidingWindowLimiter({ client, insurance: true, timeoutMs: 100, logger, report: false });
    const rule = { limit: 3, windowMs: 10_000 };
    await limiter.init();
    await server.stop();
    while (client.status === 'ready') await new Promise((resolve) => setTimeout(resolve, 10));
    await expect(limiter.consume('k', rule, { onRedisError: 'throw' })).rejects.toMatchObject({ name: 'RedisUnavailableError', reason: 'disconnected' });
    expect(await limiter.consume('k', rule)).toMatchObject({ allowed: true, degraded: 'insurance' });
    limiter.close();
  });

  it('keeps its memory bounded', async () => {
    const limiter = new SlidingWindowLimiter({ client, insurance: { maxKeys: 10 }, timeoutMs: 100, logger, report: false });
    await limiter.init();
    await server.stop();
    for (let i = 0; i < 50; i++) await limiter.consume(`key:${i}`, { limit: 1, windowMs: 60_000 });
    // A key evicted from the insurance store starts over: the first of the 50 is admitted again.
    expect(await limiter.consume('key:0', { limit: 1, windowMs: 60_000 })).toMatchObject({ allowed: true, degraded: 'insurance' });
    expect(await limiter.consume('key:49', { limit: 1, windowMs: 60_000 })).toMatchObject({ allowed: false, degraded: 'insurance' });
    limiter.close();
  });
});
