import { recordingLogger } from '../../support/recording-logger';
import { useRestartableRedis } from '../../support/restartable-redis';
import { useTestLimiters } from '../../support/test-limiter';

/*
 * The insurance limiter: while Redis cannot decide, the decisions that would fail open are made per
 * process by the in-memory reference model, with the same sliding-window semantics.
 */
describe('insurance limiter', () => {
  const redis = useRestartableRedis();
  let logger: ReturnType<typeof recordingLogger>;
  beforeEach(() => {
    logger = recordingLogger();
  });
  const insured = useTestLimiters(() => ({ client: redis.client(), insurance: true, logger }));

  it('decides by the sliding window in memory while Redis is down, and hands back to Redis when it returns', async () => {
    let now = 1_735_660_800_000;
    const limiter = insured({ clock: () => now });
    const rule = { limit: 3, windowMs: 10_000 };
    expect(await limiter.consume('k', rule)).toMatchObject({ allowed: true, remaining: 2 });
    expect((await limiter.consume('k', rule)).degraded).toBeUndefined();

    await redis.stop();
    const decisions = [];
    for (let i = 0; i < 5; i++) {
      decisions.push(await limiter.consume('k', rule));
      now += 1000;
    }
    // The insurance starts from an empty window: it knows nothing of what Redis recorded.
    expect(decisions.map((d) => [d.allowed, d.remaining, d.degraded])).toEqual([
      [true, 2, 'insurance'],
      [true, 1, 'insurance'],
      [true, 0, 'insurance'],
      [false, 0, 'insurance'],
      [false, 0, 'insurance'],
    ]);
    // Exact retry-after, as v2 on Redis would say: the oldest insured entry leaves at +10 s.
    expect(decisions[4].retryAfterMs).toBe(10_000 - 4000);
    expect(await limiter.consume('k', rule, { onRedisError: 'deny' })).toMatchObject({
      allowed: false,
      degraded: 'deny',
    });

    // The limiter's breakers close when the connection reports ready again.
    await redis.restart();
    const back = await limiter.consume('k', rule);
    expect(back.degraded).toBeUndefined();
    expect(limiter.metrics.snapshot()[0].fallbacks).toEqual({ insurance: 5, deny: 1 });
    expect(logger.warnings.filter((message) => message.includes('did not decide'))).toHaveLength(1);
  });

  it("lets onRedisError: 'throw' through: RedisUnavailableError (disconnected) instead of an insured decision", async () => {
    const limiter = insured();
    const rule = { limit: 3, windowMs: 10_000 };
    await limiter.init();
    await redis.stop();
    await expect(limiter.consume('k', rule, { onRedisError: 'throw' })).rejects.toMatchObject({
      name: 'RedisUnavailableError',
      reason: 'disconnected',
    });
    expect(await limiter.consume('k', rule)).toMatchObject({ allowed: true, degraded: 'insurance' });
  });

  it('decides by the contract of the configured functionName when Redis is down before the first call (no version active yet)', async () => {
    let now = 1_735_660_800_000;
    await redis.stop();
    const limiter = insured({ functionName: 'sliding_allow_v1', clock: () => now });
    const rule = { limit: 1, windowMs: 10_000 };
    expect(await limiter.consume('k', rule)).toMatchObject({
      allowed: true,
      remaining: 0,
      functionName: 'sliding_allow_v1',
      degraded: 'insurance',
    });
    now += 4000;
    // v1's reply says nothing about time, so a rejection waits a whole window; v2 (the default) would say 6000.
    expect(await limiter.consume('k', rule)).toMatchObject({
      allowed: false,
      retryAfterMs: 10_000,
      functionName: 'sliding_allow_v1',
      degraded: 'insurance',
    });
    expect(limiter.metrics.snapshot()).toEqual([
      expect.objectContaining({ functionName: 'sliding_allow_v1', fallbacks: { insurance: 2 } }),
    ]);
  });

  it('takes a stacked request rejected by one key back out of the others under sliding_allow_v1 (one key per call)', async () => {
    const limiter = insured({ functionName: 'sliding_allow_v1' });
    await limiter.init();
    await redis.stop();
    const roomy = { limit: 5, windowMs: 60_000 };
    const rules = [
      { key: 'roomy', ...roomy },
      { key: 'tight', limit: 1, windowMs: 60_000 },
    ];
    const first = await limiter.consumeAll(rules);
    expect(first).toMatchObject({ allowed: true, degraded: 'insurance', functionName: 'sliding_allow_v1' });
    expect(first.limits.map((limit) => limit.remaining)).toEqual([4, 0]);

    // The later key is full: the request is rejected, and the entry the roomy key recorded for it is removed.
    const second = await limiter.consumeAll(rules);
    expect(second).toMatchObject({ allowed: false, degraded: 'insurance' });
    expect(second.limits.map((limit) => [limit.allowed, limit.remaining])).toEqual([
      [true, 4],
      [false, 0],
    ]);
    // The stored window agrees: it holds the first request only, so one more leaves 3, not 2.
    expect(await limiter.consume('roomy', roomy)).toMatchObject({ allowed: true, remaining: 3, degraded: 'insurance' });
  });

  it('keeps its memory bounded', async () => {
    const limiter = insured({ insurance: { maxKeys: 10 } });
    await limiter.init();
    await redis.stop();
    for (let i = 0; i < 50; i++) await limiter.consume(`key:${i}`, { limit: 1, windowMs: 60_000 });
    // A key evicted from the insurance store starts over: the first of the 50 is admitted again.
    expect(await limiter.consume('key:0', { limit: 1, windowMs: 60_000 })).toMatchObject({
      allowed: true,
      degraded: 'insurance',
    });
    expect(await limiter.consume('key:49', { limit: 1, windowMs: 60_000 })).toMatchObject({
      allowed: false,
      degraded: 'insurance',
    });
  });
});
