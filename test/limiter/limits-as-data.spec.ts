import { MemoryBackend } from '../../lib/memory/memory-backend';
import { MemoryOverridesStore } from '../../lib/memory/memory-overrides-store';
import type { OverrideStore } from '../../lib/core/key-overrides';
import { RedisOverridesStore } from '../../lib/redis/overrides-store';
import { useTestLimiters } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';

const T0 = 1_735_660_800_000;
const MIN = 60_000;

/**
 * What the limiter makes of sliding_allow_v2 (the default): per-key overrides read in the decision's
 * own call, shadow limits that refuse nothing, and a block cache that never hides an override — on
 * Redis and on the in-memory backend alike.
 */
describe.each(['redis', 'memory'] as const)('SlidingWindowLimiter on v2 (%s)', (kind) => {
  const redis = useSharedClient();
  let keyPrefix: string;
  let now: number;
  let memory: MemoryBackend;
  let overrides: OverrideStore;
  beforeEach(() => {
    keyPrefix = uniquePrefix('lad');
    now = T0;
    memory = new MemoryBackend({ clock: () => now });
    overrides =
      kind === 'redis'
        ? new RedisOverridesStore(redis, { keyPrefix })
        : new MemoryOverridesStore(memory.model, { keyPrefix });
  });

  const limiterWith = useTestLimiters(() => ({
    ...(kind === 'redis' ? { client: redis } : { backend: memory }),
    keyPrefix,
    clock: () => now,
  }));

  it('decides on sliding_allow_v2 when no functionName is given', async () => {
    const decision = await limiterWith().consume('api:{k}', { limit: 2, windowMs: MIN });
    expect(decision.functionName).toBe('sliding_allow_v2');
  });

  it('applies an override to the next request, and reports the limit that applied', async () => {
    const limiter = limiterWith();
    const rule = { limit: 2, windowMs: MIN };
    await limiter.consume('api:{k}', rule);
    await limiter.consume('api:{k}', rule);
    const refused = await limiter.consume('api:{k}', rule);
    expect([refused.allowed, refused.limit]).toEqual([false, 2]);

    await overrides.set('api:{k}', { action: 'limit', limit: 5 });
    const raised = await limiter.consume('api:{k}', rule);
    expect([raised.allowed, raised.limit, raised.remaining, raised.override]).toEqual([true, 5, 2, 'limit']);
    // The block cache kept nothing of the refusal: the override applied at once.
    expect(limiter.metrics.snapshot()[0].blockedLocally).toBe(0);

    await overrides.set('api:{k}', { action: 'block' }, { ttlMs: 30_000 });
    const blocked = await limiter.consume('api:{k}', rule);
    expect([blocked.allowed, blocked.limit, blocked.override]).toEqual([false, 0, 'block']);
    expect(blocked.retryAfterMs).toBeGreaterThan(0);
    expect(blocked.retryAfterMs).toBeLessThanOrEqual(30_000);

    await overrides.set('api:{k}', { action: 'exempt' });
    const exempt = await limiter.consume('api:{k}', rule);
    expect([exempt.allowed, exempt.override]).toEqual([true, 'exempt']);

    // Back to the rule's limit, with the history kept: 3 recorded, more than 2.
    await overrides.delete('api:{k}');
    const plain = await limiter.consume('api:{k}', rule);
    expect([plain.allowed, plain.limit, plain.remaining, plain.override]).toEqual([false, 2, 0, undefined]);
  });

  it('peek reads the override as a decision would', async () => {
    const limiter = limiterWith();
    const rule = { limit: 2, windowMs: MIN };
    await limiter.consume('api:{p}', rule);
    await overrides.set('api:{p}', { action: 'limit', limit: 10 });
    const state = await limiter.peek('api:{p}', rule);
    expect([state.limit, state.remaining, state.count, state.override]).toEqual([10, 9, 1, 'limit']);
  });

  it('keyOverrides: false ignores overrides and keeps the block cache', async () => {
    const limiter = limiterWith({ keyOverrides: false });
    const rule = { limit: 1, windowMs: MIN };
    await overrides.set('api:{x}', { action: 'exempt' });
    expect((await limiter.consume('api:{x}', rule)).allowed).toBe(true);
    const refused = await limiter.consume('api:{x}', rule);
    expect([refused.allowed, refused.override]).toEqual([false, undefined]);
    expect((await limiter.consume('api:{x}', rule)).allowed).toBe(false);
    expect(limiter.metrics.snapshot()[0].blockedLocally).toBe(1);
  });

  it('a shadow limit never refuses, says what it would have refused, and sets no Retry-After', async () => {
    const limiter = limiterWith();
    const rules = [
      { key: 'api:{s}', limit: 10, windowMs: MIN },
      { key: 'api-candidate:{s}', limit: 2, windowMs: MIN, mode: 'shadow' as const },
    ];
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await limiter.consumeAll(rules));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true]);
    expect(decisions.map((d) => d.limits[1].wouldRefuse)).toEqual([false, false, true, true]);
    expect(decisions.map((d) => d.limits[1].shadow)).toEqual([true, true, true, true]);
    expect(decisions.every((d) => d.limits[0].shadow === undefined && d.retryAfterMs === 0)).toBe(true);
    expect(decisions[3].limits[1].retryAfterMs).toBeGreaterThan(0);

    // Refused by the enforced limit: the request's wait is the enforced limit's, never the shadow's.
    const tight = [
      { key: 'api:{t}', limit: 1, windowMs: 10 * MIN },
      { key: 'api-candidate:{t}', limit: 1, windowMs: 60 * MIN, mode: 'shadow' as const },
    ];
    await limiter.consumeAll(tight);
    const refused = await limiter.consumeAll(tight);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBe(refused.limits[0].retryAfterMs);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(10 * MIN);
  });

  it("a shadow limit's would-refuse count equals what the same limit enforced refuses", async () => {
    const shadowed = limiterWith();
    const enforced = limiterWith();
    const rule = { limit: 3, windowMs: MIN };
    let wouldRefuse = 0;
    let refused = 0;
    for (let i = 0; i < 20; i++) {
      now = T0 + i * 7_000;
      const shadow = await shadowed.consume('shadow:{a}', { ...rule, mode: 'shadow' });
      const real = await enforced.consume('real:{a}', rule);
      expect(shadow.allowed || shadow.wouldRefuse).toBe(true);
      if (shadow.wouldRefuse) wouldRefuse++;
      if (!real.allowed) refused++;
    }
    expect(refused).toBeGreaterThan(0);
    expect(wouldRefuse).toBe(refused);
  });
});
