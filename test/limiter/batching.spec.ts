import fc from 'fast-check';
import Redis from 'ioredis';
import {
  ClockSkewError,
  SlidingWindowLimiter,
  type SlidingLimitRule,
  type SlidingWindowLimiterOptions,
} from '../../lib';
import { MemoryBackend } from '../../lib/memory/memory-backend';
import { useOwnRedisServer } from '../support/own-redis';
import { RecordingRedis } from '../support/recording-redis';
import { useTestLimiters } from '../support/test-limiter';
import { waitUntil } from '../support/wait-for';

/*
 * Batching (the `batch` option): decisions that arrive while calls are in flight go to Redis as one
 * sliding_allow_many_v2 call. Every test here runs on a redis-server of its own, and counts what the
 * limiter really sent through a client that records each FCALL / EVALSHA it is asked to make.
 */

const T0 = 1_735_660_800_000;

const own = useOwnRedisServer();
let client: RecordingRedis;
let admin: Redis;

beforeAll(() => {
  client = own.connect((url) => new RecordingRedis(url));
  admin = own.connect();
});

beforeEach(async () => {
  // Redis answers a connection in order: once this PING is answered, nothing sent before it (by an
  // earlier test) is still on its way to change the data or the record.
  await client.ping();
  await admin.flushall();
  client.clear();
});

/** A limiter on the recording client, deciding by v2 (the calls these tests inspect are v2's), errors thrown. */
const limiterWith = useTestLimiters(() => ({ client, functionName: 'sliding_allow_v2', onRedisError: 'throw' }));

/** A call's result, or its error as name and message, so outcomes compare with toEqual. */
function settle(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (result) => ({ result }),
    (error: Error) => ({ error: error.name, message: error.message }),
  );
}

describe('when decisions arrive together', () => {
  it('sends them in as few calls as maxSize allows, one call per decision with batch: false', async () => {
    const rule = { limit: 5, windowMs: 60_000 };
    const burst = (limiter: SlidingWindowLimiter) =>
      Promise.all(Array.from({ length: 100 }, (_, i) => limiter.consume(`k${i}`, rule)));

    const batched = await burst(limiterWith({ batch: { maxSize: 10 } }));
    expect(batched.every((decision) => decision.allowed && decision.remaining === 4)).toBe(true);
    // The first goes at once (nothing was in flight), the other 99 in calls of at most 10.
    expect(client.sent).toHaveLength(1 + 10);
    expect(client.batches().every((keys) => keys >= 2 && keys <= 10)).toBe(true);
    expect(client.batches().reduce((sum, keys) => sum + keys, 0)).toBe(99);

    client.clear();
    await burst(limiterWith({ batch: false, keyPrefix: 'unbatched:' }));
    expect(client.sent.map((call) => call.fn)).toEqual(Array(100).fill('sliding_allow_v2'));
  });

  it.each<[string, Partial<SlidingWindowLimiterOptions>]>([
    ['batch: true', { batch: true }],
    ['the default', {}],
  ])('with %s, sends at most 16 decisions per call', async (_label, options) => {
    const limiter = limiterWith(options);
    const decisions = await Promise.all(
      Array.from({ length: 100 }, (_, i) => limiter.consume(`k${i}`, { limit: 5, windowMs: 60_000 })),
    );
    expect(decisions.every((decision) => decision.allowed && decision.remaining === 4)).toBe(true);
    const batches = client.batches();
    expect(batches.every((keys) => keys <= 16)).toBe(true);
    expect(batches).toContain(16);
    expect(batches.reduce((sum, keys) => sum + keys, 0)).toBe(99);
  });

  it("batches decisions on the server's clock too: each reads Redis' TIME, and counts stay exact", async () => {
    const before = Date.now();
    // The local clock is moved far away (2001-09-09): a score near `before` can only come from Redis.
    const localNow = 1_000_000_000_000;
    const spy = jest.spyOn(Date, 'now').mockReturnValue(localNow);
    try {
      const limiter = limiterWith({ clock: 'server' });
      const decisions = await Promise.all(
        Array.from({ length: 40 }, () => limiter.consume('shared', { limit: 5, windowMs: 60_000 })),
      );
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(5);
    } finally {
      spy.mockRestore();
    }
    const batches = client.batchCalls();
    expect(batches.length).toBeGreaterThan(0);
    // Every decision's time travels as "*" in the batch's JSON (now, member, cost, key count and the
    // limit's four numbers per one-key decision), and Redis wrote its own clock.
    for (const call of batches) {
      const fields: unknown[] = JSON.parse(call.args[call.keys + 1]);
      expect(fields.filter((_, i) => i % 8 === 0)).toEqual(Array(fields.length / 8).fill('*'));
      expect(fields.length / 8).toBeGreaterThan(1);
    }
    const scores = (await admin.zrange('rl:shared', 0, '-1', 'WITHSCORES')).filter((_, i) => i % 2 === 1).map(Number);
    expect(scores).toHaveLength(5);
    for (const score of scores) {
      expect(Math.abs(score - before)).toBeLessThan(5000);
      expect(Math.abs(score - localNow)).toBeGreaterThan(86_400_000);
    }
  });

  it('never waits when nothing is in flight: calls made one after another go one by one', async () => {
    const limiter = limiterWith({});
    for (let i = 0; i < 20; i++) await limiter.consume('quiet', { limit: 50, windowMs: 60_000 });
    expect(client.sent.map((call) => call.fn)).toEqual(Array(20).fill('sliding_allow_v2'));
  });

  it('leaves v1, which has no batch function, at one call per decision', async () => {
    const limiter = limiterWith({ functionName: 'sliding_allow_v1' });
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => limiter.consume(`v1:${i % 3}`, { limit: 5, windowMs: 60_000 })),
    );
    expect(client.sent.map((call) => call.fn)).toEqual(Array(30).fill('sliding_allow_v1'));
  });

  it('settles batched calls when the test fakes timers (the batch is flushed by the timers module, not the global)', async () => {
    const limiter = limiterWith({});
    await limiter.init();
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
    try {
      const decisions = await Promise.all(
        Array.from({ length: 20 }, (_, i) => limiter.consume(`fake:${i}`, { limit: 1, windowMs: 60_000 })),
      );
      expect(decisions.every((decision) => decision.allowed)).toBe(true);
      expect(client.batches().length).toBeGreaterThan(0);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('while the circuit breaker is open', () => {
  it('answers each decision at once (fail fast) instead of holding it for a batch', async () => {
    // A client of this test's own, disconnected for good once the limiter is ready (no reconnect, so
    // nothing resets the breaker). Not made by own.connect, whose second disconnect would leave a timer.
    const down = new RecordingRedis(own.server().url);
    const limiter = limiterWith({ client: down });
    try {
      await limiter.init();
    } finally {
      down.disconnect();
    }
    await waitUntil(() => down.status === 'end');
    // Three failures (the limiter's breaker threshold), one after another so none waits for a batch.
    for (let i = 0; i < 3; i++) {
      const outcome = await settle(limiter.consume('down', { limit: 5, windowMs: 60_000 }));
      expect(outcome).toMatchObject({ error: 'RedisUnavailableError', message: 'Redis is not connected' });
    }
    down.clear();

    // Decisions made together: from the second on, each finds one in flight and could wait for the
    // batcher's flush, an immediate queued after this one. So this immediate sees the decisions that
    // were answered without waiting for a flush.
    const outcomes: unknown[] = [];
    const answeredBeforeAnyFlush = new Promise<number>((resolve) => setImmediate(() => resolve(outcomes.length)));
    const burst = Array.from({ length: 20 }, (_, i) =>
      settle(limiter.consume(`down:${i}`, { limit: 5, windowMs: 60_000 })).then((outcome) => outcomes.push(outcome)),
    );
    expect(await answeredBeforeAnyFlush).toBe(20);
    await Promise.all(burst);
    expect(outcomes).toEqual(
      Array(20).fill({ error: 'RedisUnavailableError', message: expect.stringContaining('circuit breaker open') }),
    );
    // Nothing went to Redis while the breaker was open: no batch, and no single call either.
    expect(down.sent).toEqual([]);
  });
});

describe('a batch decides exactly as the same calls one by one', () => {
  type Call = { op: 'consume'; key: number } | { op: 'consumeAll'; keys: number[] };
  const KEYS = 3;
  const key = fc.nat(KEYS - 1);
  const call: fc.Arbitrary<Call> = fc.oneof(
    { weight: 4, arbitrary: key.map((k) => ({ op: 'consume' as const, key: k })) },
    {
      weight: 1,
      arbitrary: fc
        .uniqueArray(key, { minLength: 1, maxLength: 3 })
        .map((keys) => ({ op: 'consumeAll' as const, keys })),
    },
  );
  const scenario = fc.record({
    // Windows of seconds: Redis expires keys in real time, which must not overtake the test's clock.
    rules: fc.array(
      fc.record({ limit: fc.integer({ min: 1, max: 6 }), windowMs: fc.integer({ min: 2000, max: 5000 }) }),
      { minLength: KEYS, maxLength: KEYS },
    ),
    maxSize: fc.integer({ min: 2, max: 8 }),
    // Bursts of calls made at once, each at its own time (forward from the one before).
    bursts: fc.array(
      fc.record({
        afterMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 6000 })),
        calls: fc.array(call, { minLength: 1, maxLength: 25 }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
  });

  function perform(limiter: SlidingWindowLimiter, call: Call, rules: SlidingLimitRule[]): Promise<unknown> {
    if (call.op === 'consume') return limiter.consume(`k${call.key}`, rules[call.key]);
    return limiter.consumeAll(call.keys.map((k) => ({ key: `k${k}`, ...rules[k] })));
  }

  it.each(['function', 'script'] as const)(
    '%s mode: same outcome for every call of random bursts, and the same entries',
    async (mode) => {
      let batchCalls = 0;
      let rejected = 0;
      await fc.assert(
        fc.asyncProperty(scenario, async ({ rules, maxSize, bursts }) => {
          await admin.flushdb();
          client.clear();
          let now = T0;
          const clock = () => now;
          const onRedis = limiterWith({ clock, mode, batch: { maxSize }, keyPrefix: 'rl:' });
          // Started before the bursts: on a busy machine a cold limiter's first decisions could outwait
          // start-up's bound (timeoutMs) and go to the failure policy.
          await onRedis.init();
          const memory = new MemoryBackend({ clock });
          const oneByOne = limiterWith({ clock, backend: memory, batch: false, keyPrefix: 'rl:' });
          onRedis.close(); // nothing to stop but its listener on the shared client
          oneByOne.close();
          for (const { afterMs, calls } of bursts) {
            now += afterMs;
            const together = await Promise.all(calls.map((c) => settle(perform(onRedis, c, rules))));
            const inTurn: unknown[] = [];
            for (const c of calls) inTurn.push(await settle(perform(oneByOne, c, rules)));
            expect(together).toEqual(inTurn);
            rejected += together.filter(
              (outcome) => (outcome as { result?: { allowed: boolean } }).result?.allowed === false,
            ).length;
          }
          // The entries still in each window (Redis may keep a key the model has expired, or old entries
          // nobody has trimmed yet).
          for (let k = 0; k < KEYS; k++) {
            const inWindow = (score: number) => score > now - rules[k].windowMs;
            const scores = (await admin.zrange(`rl:k${k}`, 0, '-1', 'WITHSCORES'))
              .filter((_, i) => i % 2 === 1)
              .map(Number)
              .filter(inWindow);
            expect({ key: k, scores }).toEqual({
              key: k,
              scores: memory
                .entries(`rl:k${k}`)
                .map((entry) => entry.score)
                .filter(inWindow),
            });
          }
          batchCalls += client.batches().length;
        }),
        { numRuns: 60 },
      );
      // The runs did batch, and did reach full windows.
      expect(batchCalls).toBeGreaterThan(0);
      expect(rejected).toBeGreaterThan(0);
    },
    60_000,
  );
});

describe('a batch that Redis answers with an error', () => {
  it('gives a CLOCKSKEW to its own caller only; the others are decided, each counted once', async () => {
    let now = T0 + 5000;
    const limiter = limiterWith({ clock: () => now, maxClockSkewMs: 1000 });
    await limiter.consume('skewed', { limit: 10, windowMs: 60_000 });
    now = T0;
    client.clear();

    const rule = { limit: 10, windowMs: 60_000 };
    const outcomes = await Promise.all(
      ['first', 'a', 'skewed', 'b', 'c'].map((key) => settle(limiter.consume(key, rule))),
    );

    expect(outcomes[2]).toEqual({ error: ClockSkewError.name, message: expect.stringContaining('CLOCKSKEW') });
    for (const i of [0, 1, 3, 4])
      expect(outcomes[i]).toEqual({ result: expect.objectContaining({ allowed: true, remaining: 9 }) });
    // The batch failed at "skewed" and its decisions were sent again one by one.
    expect(client.batches()).toEqual([4]);
    for (const key of ['first', 'a', 'b', 'c']) expect(await admin.zcard(`rl:${key}`)).toBe(1);
    expect(await admin.zcard('rl:skewed')).toBe(1);
  });

  it("gives Redis' error for a key of the wrong type to that caller, by its onRedisError", async () => {
    await admin.set('rl:not-a-sorted-set', 'x');
    const limiter = limiterWith({ onRedisError: 'allow' });
    await limiter.init();
    const rule = { limit: 1, windowMs: 60_000 };

    const [first, wrong, other] = await Promise.all([
      limiter.consume('first', rule),
      limiter.consume('not-a-sorted-set', rule),
      limiter.consume('other', rule, { onRedisError: 'throw' }),
    ]);
    expect(first).toMatchObject({ allowed: true, remaining: 0 });
    expect(other).toMatchObject({ allowed: true, remaining: 0 });
    expect(wrong).toMatchObject({ allowed: true, degraded: 'allow' });
    expect(client.batches().length).toBeGreaterThan(0);

    // Again with 'throw' for the wrong key, in a batch: the first call goes alone, the other two together.
    client.clear();
    const [a2, b2, thrown] = await Promise.all([
      limiter.consume('a2', rule),
      limiter.consume('b2', rule),
      settle(limiter.consume('not-a-sorted-set', rule, { onRedisError: 'throw' })),
    ]);
    // The wrong key went to Redis in one batch, with at least one other decision.
    const withWrongKey = client.batchCalls().filter((call) => call.args.includes('rl:not-a-sorted-set'));
    expect(withWrongKey).toHaveLength(1);
    expect(withWrongKey[0].keys).toBeGreaterThanOrEqual(2);
    expect(thrown).toEqual({ error: 'ReplyError', message: expect.stringContaining('WRONGTYPE') });
    expect(a2).toMatchObject({ allowed: true, remaining: 0 });
    expect(b2).toMatchObject({ allowed: true, remaining: 0 });
    expect(await admin.zcard('rl:other')).toBe(1);
  });
});
