import { RedisUnavailableError } from '../../lib/core/errors/redis-unavailable.error';
import { CircuitBreakers } from '../../lib/limiter/circuit-breakers';
import { RedisCallPolicy } from '../../lib/limiter/redis-call-policy';

/*
 * The policy's own logic — the race between a reply and its deadline, retries, what a synchronous
 * throw becomes — with attempts that are plain functions; the policy against a real Redis that stops
 * answering is in resilience/.
 */
describe('RedisCallPolicy', () => {
  const policy = (timeoutMs = 40, retries = 1) =>
    new RedisCallPolicy(timeoutMs, retries, new CircuitBreakers(3, 1000, () => ''), () => true);

  it('resolves with the reply', async () => {
    await expect(policy().run(() => Promise.resolve('reply'))).resolves.toBe('reply');
  });

  it('rejects, never throws, when the attempt throws synchronously, and does not retry an answer', async () => {
    let attempts = 0;
    const call = policy().run(() => {
      attempts++;
      throw new Error('bad arguments');
    });
    await expect(call).rejects.toThrow('bad arguments');
    // Past the deadline: a settled call is not attempted again.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(attempts).toBe(1);
  });

  it('times out an attempt that never settles, retries it once with the same function, then gives up', async () => {
    let attempts = 0;
    const never = () => {
      attempts++;
      return new Promise<string>(() => undefined);
    };
    const error = await policy(40, 1)
      .run(never)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as RedisUnavailableError).message).toMatch(/did not answer within 40 ms/);
    expect(attempts).toBe(2);
  });

  it('takes the reply that comes after a timed-out attempt has been retried', async () => {
    let attempts = 0;
    const slowThenFast = () =>
      ++attempts === 1 ? new Promise<string>(() => undefined) : Promise.resolve(`reply ${attempts}`);
    await expect(policy(40, 1).run(slowThenFast)).resolves.toBe('reply 2');
  });
});
