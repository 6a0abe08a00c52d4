import { ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import type { RateLimitDecision } from '../../lib';
import { OVERRIDE_CHANGES_CHANNEL } from '../../lib/redis/override-changes';
import { useOwnRedisServer } from '../support/own-redis';
import { sleep } from '../support/sleep';
import { useTestLimiters } from '../support/test-limiter';
import { waitFor, waitUntil } from '../support/wait-for';

const WORKER = join(__dirname, '..', 'support', 'workers', 'consume-worker.js');
const rule = { limit: 2, windowMs: 600_000 };

/** A second application instance: the built package's limiter, default options, in a process of its own. */
class Instance {
  private readonly child: ChildProcess;
  private nextId = 0;

  constructor(url: string, keyPrefix: string) {
    this.child = fork(WORKER, [url, keyPrefix], { stdio: 'inherit' });
  }

  async consume(key: string): Promise<{ decision: RateLimitDecision; blockedLocally: number }> {
    const id = this.nextId++;
    const answer = new Promise<{ decision: RateLimitDecision; blockedLocally: number }>((resolve, reject) => {
      const onMessage = (msg: { id: number; type: string; message?: string } & Record<string, unknown>) => {
        if (msg.id !== id) return;
        this.child.off('message', onMessage);
        if (msg.type === 'failed') reject(new Error(msg.message));
        else resolve(msg as never);
      };
      this.child.on('message', onMessage);
    });
    this.child.send({ type: 'consume', id, key, ...rule });
    return answer;
  }

  /** Consumes until the refusal comes from its block cache (its subscription is made on the first decision). */
  async holdCachedRefusal(key: string): Promise<void> {
    await waitFor(
      () => this.consume(key),
      ({ decision, blockedLocally }) => !decision.allowed && blockedLocally > 0,
    );
  }

  async stop(): Promise<void> {
    const exited = once(this.child, 'exit');
    this.child.send({ type: 'stop' });
    await exited;
  }
}

/*
 * The block cache with overrides read (the defaults): a refusal is kept locally, and an override set
 * anywhere reaches every limiter before its next decision of that key, over pub/sub.
 */
describe('block cache with per-key overrides on (the defaults)', () => {
  const own = useOwnRedisServer();
  own.emptyBeforeEach();
  const limiters = useTestLimiters();
  let instance: Instance | undefined;
  afterEach(async () => {
    await instance?.stop();
    instance = undefined;
  });

  it('answers a hammered key locally with the default options', async () => {
    const limiter = limiters({ client: own.connect() });
    await Promise.all([limiter.consume('hot', rule), limiter.consume('hot', rule)]);
    // The first refusal starts the subscription; refusals are kept once it is confirmed.
    await waitUntil(async () => {
      await limiter.consume('hot', rule);
      return (limiter.metrics.snapshot()[0].blockedLocally ?? 0) > 0;
    });
    const before = limiter.metrics.snapshot()[0];
    const attack = await Promise.all(Array.from({ length: 2000 }, () => limiter.consume('hot', rule)));
    expect(attack.every((decision) => !decision.allowed)).toBe(true);
    const after = limiter.metrics.snapshot()[0];
    expect((after.calls - before.calls) / 2000).toBeLessThanOrEqual(0.05);
  });

  it("applies an override set by another process to this process's next request", async () => {
    const keyPrefix = 'app:';
    instance = new Instance(own.server().url, keyPrefix);
    await instance.holdCachedRefusal('user:{42}');

    const setter = limiters({ client: own.connect(), keyPrefix });
    await setter.overrides.set('user:{42}', { action: 'exempt' });
    expect((await instance.consume('user:{42}')).decision).toMatchObject({ allowed: true, override: 'exempt' });

    await setter.overrides.delete('user:{42}');
    expect((await instance.consume('user:{42}')).decision).toMatchObject({ allowed: false });
  });

  it('keeps no refusal through a lost subscription, whose messages may be lost', async () => {
    const keyPrefix = 'lost:';
    instance = new Instance(own.server().url, keyPrefix);
    await instance.holdCachedRefusal('k');
    const redis = own.connect();
    await redis.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    // An override written without its message, as one published while the subscription was down.
    await redis.hset('{lost:k}|override-wrapped', 'action', 'exempt', 'createdAt', Date.now());
    await sleep(100);
    expect((await instance.consume('k')).decision).toMatchObject({ allowed: true, override: 'exempt' });
    // It subscribes again, and then keeps refusals again.
    await waitFor(
      () => redis.pubsub('NUMSUB', OVERRIDE_CHANGES_CHANNEL),
      (reply) => Number((reply as unknown[])[1]) === 1,
    );
    await redis.del('{lost:k}|override-wrapped');
    await instance.holdCachedRefusal('k');
  });

  it('applies an override that lands while a refusal of the key is on its way (the cache keeps none across it)', async () => {
    const limiter = limiters({ client: own.connect() });
    const setter = limiters({ client: own.connect() });
    await Promise.all([limiter.consume('race', rule), limiter.consume('race', rule)]);
    await waitUntil(async () => {
      await limiter.consume('race', rule);
      return (limiter.metrics.snapshot()[0].blockedLocally ?? 0) > 0;
    });
    await limiter.reset('race');
    await Promise.all([limiter.consume('race', rule), limiter.consume('race', rule)]);
    // A refusal on its way while the override lands: it must not be kept.
    const refused = limiter.consume('race', rule);
    await setter.overrides.set('race', { action: 'exempt' });
    expect((await refused).allowed).toBe(false);
    await sleep(50);
    expect(await limiter.consume('race', rule)).toMatchObject({ allowed: true, override: 'exempt' });
  });
});
