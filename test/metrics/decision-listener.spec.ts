import Redis from 'ioredis';
import { RateLimitConfigError, SlidingWindowLimiter, type DecisionEvent } from '../../lib';
import { freePort } from '../support/free-port';
import { useTestLimiters } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';

describe('SlidingWindowLimiter.onDecision', () => {
  const redis = useSharedClient();
  const newLimiter = useTestLimiters(() => ({
    client: redis,
    keyPrefix: uniquePrefix('listen'),
    functionName: 'sliding_allow_v2', // the function the decisions name
    // The block cache keeps refusals only while no override is read.
    keyOverrides: false,
  }));

  it('tells each listener every consume and consumeAll decision, without the keys, until it unsubscribes', async () => {
    const limiter = newLimiter();
    const events: DecisionEvent[] = [];
    const stop = limiter.onDecision((event) => events.push(event));
    const rule = { limit: 1, windowMs: 60_000 };
    await limiter.consume('user:1', rule);
    await limiter.consume('user:1', rule); // rejected by Redis
    await limiter.consume('user:1', rule); // rejected by the block cache
    await limiter.consumeAll(
      [
        { key: 'ip:10.0.0.1', limit: 5, windowMs: 1000 },
        { key: 'user:2', limit: 100, windowMs: 60_000 },
      ],
      { limitNames: ['burst', 'daily'] },
    );
    await limiter.peek('user:1', rule);

    expect(events).toHaveLength(4);
    expect(events[0]).toEqual({
      functionName: 'sliding_allow_v2',
      allowed: true,
      rules: [rule],
      limits: [expect.objectContaining({ allowed: true, limit: 1, remaining: 0 })],
      cost: 1,
      retryAfterMs: 0,
      latencyMs: expect.any(Number),
      degraded: undefined,
      degradedCause: undefined,
      blockedLocally: false,
      limitNames: undefined,
    });
    expect(events[1]).toMatchObject({ allowed: false, blockedLocally: false, latencyMs: expect.any(Number) });
    expect(events[1].retryAfterMs).toBeGreaterThan(0);
    expect(events[2]).toMatchObject({ allowed: false, blockedLocally: true, latencyMs: undefined });
    expect(events[3]).toMatchObject({
      allowed: true,
      rules: [
        { limit: 5, windowMs: 1000 },
        { limit: 100, windowMs: 60_000 },
      ],
      limitNames: ['burst', 'daily'],
    });
    expect(JSON.stringify(events)).not.toMatch(/user:|10\.0\.0\.1/);

    stop();
    stop(); // twice is harmless
    await limiter.consume('user:3', rule);
    expect(events).toHaveLength(4);
  });

  it('reports degraded decisions with the failed call’s latency, and a throwing listener changes nothing', async () => {
    const warnings: string[] = [];
    const port = await freePort(); // nothing listens there
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
    client.on('error', () => undefined);
    const limiter = new SlidingWindowLimiter({
      client,
      report: false,
      timeoutMs: 50,
      onRedisError: 'deny',
      logger: { log: () => undefined, warn: (message) => warnings.push(message) },
    });
    const events: DecisionEvent[] = [];
    limiter.onDecision(() => {
      throw new Error('listener bug');
    });
    limiter.onDecision((event) => events.push(event));
    const decision = await limiter.consume('k', { limit: 1, windowMs: 1000 });
    await limiter.consume('k', { limit: 1, windowMs: 1000 }, { onRedisError: 'allow' });
    await expect(limiter.consume('k', { limit: 1, windowMs: 1000 }, { onRedisError: 'throw' })).rejects.toThrow();

    expect(decision).toMatchObject({ allowed: false, degraded: 'deny' });
    // Each with why Redis did not decide: nothing listens on the port.
    expect(events.map((e) => [e.allowed, e.degraded, e.degradedCause])).toEqual([
      [false, 'deny', 'connection'],
      [true, 'allow', 'connection'],
    ]);
    expect(events[0].latencyMs).toEqual(expect.any(Number));
    expect(warnings.filter((w) => w.includes('listener threw'))).toEqual([expect.stringContaining('listener bug')]);
    await limiter.close();
    // A client whose connection was refused has ended already; disconnect() would start ioredis'
    // 2-second close timer on the dead socket and keep the worker alive.
    if (client.status !== 'end') client.disconnect();
  });

  it('refuses a listener that is not a function', () => {
    const limiter = newLimiter();
    expect(() => limiter.onDecision('nope' as never)).toThrow(RateLimitConfigError);
  });
});
