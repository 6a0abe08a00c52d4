import { MemoryBackend } from '../../lib/memory/memory-backend';
import { useTestLimiters } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';

/*
 * The article's deployment story on one set of keys: an application on sliding_allow_v1 canaries
 * sliding_allow_v2, moves to it, and rolls back. Every admission made by either version counts for
 * the other (a cost of 2 on v2 is two entries v1 counts), so no switch ever admits more than the
 * limit or forgets a request. On Redis (Valkey in the Valkey slice) and on the memory store.
 */

const T0 = 1_735_660_800_000;
const rule = { limit: 5, windowMs: 60_000 };

describe.each(['redis', 'memory'] as const)('v1 → v2 → v1 on the same keys (%s)', (store) => {
  const redis = useSharedClient();
  const limiterWith = useTestLimiters(() => ({ keyPrefix: uniquePrefix('v1v2'), functionName: 'sliding_allow_v1' }));
  const limiterOn = (backend: MemoryBackend, now: () => number) =>
    limiterWith({ ...(store === 'redis' ? { client: redis } : { backend }), clock: now });

  it('keeps every admission through a canary, the move to v2 and the rollback', async () => {
    let now = T0;
    const limiter = limiterOn(new MemoryBackend({ clock: () => now }), () => now);
    const decide = async (cost = 1) => {
      now += 1;
      return limiter.consume('user:{42}', rule, { cost });
    };

    expect(await decide()).toMatchObject({ functionName: 'sliding_allow_v1', allowed: true, remaining: 4 });
    // A 100 % canary sends the key to v2, which counts v1's entry.
    await limiter.use({ functionName: 'sliding_allow_v1', canary: { functionName: 'sliding_allow_v2', percent: 100 } });
    expect(await decide()).toMatchObject({ functionName: 'sliding_allow_v2', allowed: true, remaining: 3 });
    await limiter.use('sliding_allow_v2');
    expect(await decide(2)).toMatchObject({ functionName: 'sliding_allow_v2', allowed: true, remaining: 1 });

    // Rollback: v1 counts v2's three entries (the cost of 2 is two of them) beside its own.
    await limiter.use('sliding_allow_v1');
    expect(await decide()).toMatchObject({ functionName: 'sliding_allow_v1', allowed: true, remaining: 0 });
    expect(await decide()).toMatchObject({ functionName: 'sliding_allow_v1', allowed: false });
    expect((await limiter.peek('user:{42}', rule)).count).toBe(5);

    // And forward again: v2 refuses too, and admits once the first entry has left the window.
    await limiter.use('sliding_allow_v2');
    expect(await decide()).toMatchObject({ functionName: 'sliding_allow_v2', allowed: false });
    now = T0 + rule.windowMs; // the next decision, 1 ms later, finds the first entry gone
    expect(await decide()).toMatchObject({ functionName: 'sliding_allow_v2', allowed: true, remaining: 0 });
  });
});
