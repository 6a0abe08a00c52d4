import type Redis from 'ioredis';
import { reconnectingClient } from '../../support/test-redis';
import { RedisUnavailableError, SlidingWindowLimiter } from '../../../lib';
import { startRedisServer, type RedisServer } from '../../support/redis-server';
import { rejectionOf } from '../../support/rejection';

/*
 * peek and reset while Redis is down follow onRedisError as consume does: the recipe that counts
 * failed logins (peek, consume on failure, reset on success) then never answers 500 while the
 * guard fails open.
 */
describe('peek and reset while Redis is down', () => {
  let server: RedisServer;
  let client: Redis;
  const warnings: string[] = [];
  const logger = { log: () => undefined, warn: (message: string) => void warnings.push(message) };
  const rule = { limit: 3, windowMs: 60_000 };

  beforeEach(async () => {
    warnings.length = 0;
    server = await startRedisServer();
    client = reconnectingClient(server.url);
  });
  afterEach(async () => {
    client.disconnect();
    await server.stop();
  });

  const limiterWith = (onRedisError: 'allow' | 'deny' | 'throw') =>
    new SlidingWindowLimiter({ client, onRedisError, timeoutMs: 100, logger, report: false });

  it.each(['allow', 'deny'] as const)(
    'under %s: reset resolves and logs degraded mode; peek answers by the policy',
    async (policy) => {
      const limiter = limiterWith(policy);
      await limiter.consume('login:1', rule);
      await server.stop();
      await expect(limiter.reset('login:1')).resolves.toBeUndefined();
      expect(warnings.join('\n')).toMatch(/Redis did not decide/);
      const state = await limiter.peek('login:1', rule);
      expect([state.allowed, state.degraded]).toEqual([policy === 'allow', policy]);
    },
  );

  it('under throw: reset and peek reject with RedisUnavailableError; a per-call policy overrides the limiter', async () => {
    const limiter = limiterWith('throw');
    await limiter.consume('login:2', rule);
    await server.stop();
    expect(await rejectionOf(limiter.reset('login:2'))).toBeInstanceOf(RedisUnavailableError);
    expect(await rejectionOf(limiter.peek('login:2', rule))).toBeInstanceOf(RedisUnavailableError);
    await expect(limiter.reset('login:2', { onRedisError: 'allow' })).resolves.toBeUndefined();
  });

  it('reset clears the insurance limiter too, so a reset holds while the insurance decides', async () => {
    const limiter = new SlidingWindowLimiter({ client, insurance: true, timeoutMs: 100, logger, report: false });
    await limiter.consume('login:3', rule);
    await server.stop();
    for (let i = 0; i < 3; i++) await limiter.consume('login:3', rule);
    expect((await limiter.consume('login:3', rule)).allowed).toBe(false);
    await limiter.reset('login:3');
    expect(await limiter.consume('login:3', rule)).toMatchObject({ allowed: true, degraded: 'insurance' });
  });
});
