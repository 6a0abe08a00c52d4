import { RedisUnavailableError } from '../../../lib';
import { recordingLogger } from '../../support/recording-logger';
import { rejectionOf } from '../../support/rejection';
import { useRestartableRedis } from '../../support/restartable-redis';
import { useTestLimiters } from '../../support/test-limiter';

/*
 * peek and reset while Redis is down follow onRedisError as consume does: the recipe that counts
 * failed logins (peek, consume on failure, reset on success) then never answers 500 while the
 * guard fails open.
 */
describe('peek and reset while Redis is down', () => {
  const redis = useRestartableRedis();
  let logger: ReturnType<typeof recordingLogger>;
  beforeEach(() => {
    logger = recordingLogger();
  });
  const limiterWith = useTestLimiters(() => ({ client: redis.client(), logger }));
  const rule = { limit: 3, windowMs: 60_000 };

  it.each(['allow', 'deny'] as const)(
    'under %s: reset resolves and logs degraded mode; peek answers by the policy',
    async (policy) => {
      const limiter = limiterWith({ onRedisError: policy });
      await limiter.consume('login:1', rule);
      await redis.stop();
      await expect(limiter.reset('login:1')).resolves.toBeUndefined();
      expect(logger.warnings.join('\n')).toMatch(/Redis did not decide/);
      const state = await limiter.peek('login:1', rule);
      expect([state.allowed, state.degraded]).toEqual([policy === 'allow', policy]);
    },
  );

  it('under throw: reset and peek reject with RedisUnavailableError; a per-call policy overrides the limiter', async () => {
    const limiter = limiterWith({ onRedisError: 'throw' });
    await limiter.consume('login:2', rule);
    await redis.stop();
    expect(await rejectionOf(limiter.reset('login:2'))).toBeInstanceOf(RedisUnavailableError);
    expect(await rejectionOf(limiter.peek('login:2', rule))).toBeInstanceOf(RedisUnavailableError);
    await expect(limiter.reset('login:2', { onRedisError: 'allow' })).resolves.toBeUndefined();
  });

  it('reset clears the insurance limiter too, so a reset holds while the insurance decides', async () => {
    const limiter = limiterWith({ insurance: true });
    await limiter.consume('login:3', rule);
    await redis.stop();
    for (let i = 0; i < 3; i++) await limiter.consume('login:3', rule);
    expect((await limiter.consume('login:3', rule)).allowed).toBe(false);
    await limiter.reset('login:3');
    expect(await limiter.consume('login:3', rule)).toMatchObject({ allowed: true, degraded: 'insurance' });
  });
});
