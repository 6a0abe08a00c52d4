import calculateSlot from 'cluster-key-slot';
import Redis from 'ioredis';
import { UnexpectedReplyError } from '../../lib/core/errors/unexpected-reply.error';
import type { AllowCall } from '../../lib/core/function-contract';
import type { SlidingLimitRule } from '../../lib/core/limit-rule';
import { overrideKeyOf } from '../../lib/core/override-keys';
import { decisionReaderOf } from '../../lib/redis/contracts/decision-readers';
import { V2_CONTRACT } from '../../lib/redis/contracts/v2.contract';
import { connectShared, uniquePrefix } from '../support/test-redis';
import { ensureLibraries, errorMessageOf } from '../support/lua-functions';
import { sleep } from '../support/sleep';

/*
 * rate_limit_v2 called directly with FCALL, and through its contract: windows and costs, two
 * precisions on one key, shadow limits, per-key overrides and their keys. Expected values are worked
 * out by hand from the header of rate_limit_v2.lua. Reply per limit: room, count, remaining, retry_after_ms, reset_ms, limit, override.
 */
describe('Lua function contract: rate_limit_v2', () => {
  const T0 = 1_735_660_800_000; // a multiple of 60,000
  const MIN = 60_000;
  let redis: Redis;
  let prefix: string;

  beforeAll(async () => {
    redis = connectShared();
    await ensureLibraries(redis);
  });
  afterAll(() => redis.quit());
  beforeEach(() => {
    prefix = uniquePrefix('lua2');
  });

  const key = (name: string) => `${prefix}{${name}}`;
  const ovr = (name: string) => overrideKeyOf(key(name)) as string;

  /**
   * sliding_allow_v2 with max skew 1000 ms on `names` (each `{name}` under the test's prefix); a limit
   * is (window_ms, limit, precision_ms, flags); the override keys of the limits whose flags include 2
   * follow.
   */
  const allow = (names: string[], now: number | string, member: string, cost: number, ...limits: number[]) => {
    const overrides = names.filter((_, i) => limits[4 * i + 3] >= 2).map(ovr);
    const keys = [...names.map(key), ...overrides];
    return redis.fcall('sliding_allow_v2', keys.length, ...keys, now, member, 1000, cost, ...limits) as Promise<
      number[]
    >;
  };
  const peek = (names: string[], now: number, cost: number, ...limits: number[]) => {
    const overrides = names.filter((_, i) => limits[4 * i + 3] >= 2).map(ovr);
    const keys = [...names.map(key), ...overrides];
    return redis.fcall_ro('sliding_peek_v2', keys.length, ...keys, now, cost, ...limits) as Promise<number[]>;
  };

  describe('windows and costs, with the limit and override per limit', () => {
    it('admits a log request only when its whole cost fits', async () => {
      expect(await allow(['k'], T0, 'a', 3, 10_000, 5, 0, 0)).toEqual([1, 1, 3, 2, 0, 10_000, 5, 0]);
      // 3 + 3 > 5: one entry of `a` must leave first, at T0 + 10 s; nothing recorded.
      expect(await allow(['k'], T0 + 1, 'b', 3, 10_000, 5, 0, 0)).toEqual([0, 0, 3, 2, 9_999, 9_999, 5, 0]);
      expect(await redis.zrange(key('k'), 0, '-1')).toEqual(['a', 'a#2', 'a#3']);
    });

    it('counts a bucketed sub-window in full while it overlaps the window', async () => {
      const limit = [10 * MIN, 10, MIN, 0];
      expect(await allow(['b'], T0 + MIN, 'a', 4, ...limit)).toEqual([1, 1, 4, 6, 0, 11 * MIN - 1, 10, 0]);
      expect(await allow(['b'], T0 + 2 * MIN, 'b', 4, ...limit)).toEqual([1, 1, 8, 2, 0, 11 * MIN - 1, 10, 0]);
      const at = T0 + 2 * MIN + 10_000;
      // 8 + 4 > 10: sub-window 1 ([T0+1m, T0+2m)) stops counting at T0 + 12m - 1 ms.
      expect(await allow(['b'], at, 'c', 4, ...limit)).toEqual([
        0,
        0,
        8,
        2,
        T0 + 12 * MIN - 1 - at,
        T0 + 13 * MIN - 1 - at,
        10,
        0,
      ]);
      expect((await allow(['b'], T0 + 12 * MIN - 2, 'c', 4, ...limit))[0]).toBe(0);
      expect((await allow(['b'], T0 + 12 * MIN - 1, 'c', 4, ...limit))[0]).toBe(1);
    });

    it('writes nothing when it refuses: a hash keeps its fields and its TTL', async () => {
      const limit = [1000, 2, 100, 0];
      await allow(['r'], T0, 'a', 2, ...limit);
      await redis.pexpire(key('r'), 600_000); // a TTL no call sets, to see that none is set
      const before = await redis.hgetall(key('r'));
      // The first sub-window has left at T0 + 1099; the refusal still deletes nothing.
      expect((await allow(['r'], T0 + 1050, 'b', 2, ...limit))[0]).toBe(0);
      expect(await redis.hgetall(key('r'))).toEqual(before);
      expect(await redis.pttl(key('r'))).toBeGreaterThan(599_000);
    });
  });

  describe('two precisions calling one key (a rolling deploy)', () => {
    /** The brief's reproduction: 1 per 3 s, a call every 100 ms for 60 s, precisions alternating. */
    let runs = 0;
    async function admissions(precisionOf: (i: number) => number) {
      const drift = key(`drift-${runs++}`);
      const pipeline = redis.pipeline();
      for (let i = 0; i < 600; i++)
        pipeline.fcall('sliding_allow_v2', 1, drift, T0 + i * 100, `m${i}`, 1000, 1, 3000, 1, precisionOf(i), 0);
      const replies = (await pipeline.exec()) ?? [];
      const failed = replies.find(([error]) => error);
      if (failed) throw failed[0] as Error;
      return replies.filter(([, reply]) => (reply as number[])[0] === 1).length;
    }
    const alternating = (i: number) => (i % 2 ? 999 : 1000);

    it('never lock the key out: as many admissions as with one precision', async () => {
      expect(await admissions(() => 1000)).toBe(15);
      expect(await admissions(alternating)).toBe(15);
    });

    it('count the key in the precision it was created with', async () => {
      await allow(['p'], T0 + 5, 'a', 1, 10_000, 5, 1000, 0);
      // A caller of precision 250 counts and records in the key's 1,000 ms sub-windows.
      expect(await allow(['p'], T0 + 1500, 'b', 1, 10_000, 5, 250, 0)).toEqual([1, 1, 2, 3, 0, 11_999 - 1500, 5, 0]);
      const fields = await redis.hgetall(key('p'));
      expect([fields.p, fields[String(T0 / 1000)], fields[String(T0 / 1000 + 1)]]).toEqual(['1000', '1', '1']);
      // A log caller too: retry_after_ms when the key's first sub-window leaves, never early.
      expect(await allow(['p'], T0 + 1600, 'c', 4, 10_000, 5, 0, 0)).toEqual([
        0,
        0,
        2,
        3,
        10_999 - 1600,
        11_999 - 1600,
        5,
        0,
      ]);
    });
  });

  describe('shadow limits', () => {
    it('alone, admit everything, record what has room and say what they would have refused', async () => {
      const shadow = [10_000, 2, 0, 1];
      expect(await allow(['s'], T0, 'a', 2, ...shadow)).toEqual([1, 1, 2, 0, 0, 10_000, 2, 0]);
      // No room: admitted, not recorded, room 0 with the time the cost would fit.
      expect(await allow(['s'], T0 + 1, 'b', 1, ...shadow)).toEqual([1, 0, 2, 0, 9_999, 9_999, 2, 0]);
      expect(await redis.zcard(key('s'))).toBe(2);
    });

    it('stacked on an enforced limit, record only what the enforced limit admits and they have room for', async () => {
      const enforced = [10_000, 1, 0, 0];
      const shadow = [10_000, 5, 0, 1];
      expect(await allow(['e', 'x'], T0, 'a', 1, ...enforced, ...shadow)).toEqual([
        1, 1, 1, 0, 0, 10_000, 1, 0, 1, 1, 4, 0, 10_000, 5, 0,
      ]);
      // Refused by the enforced limit: the shadow limit has room but records nothing.
      expect(await allow(['e', 'x'], T0 + 1, 'b', 1, ...enforced, ...shadow)).toEqual([
        0, 0, 1, 0, 9_999, 9_999, 1, 0, 1, 1, 4, 0, 9_999, 5, 0,
      ]);
      expect(await redis.zcard(key('x'))).toBe(1);
    });
  });

  describe('per-key overrides', () => {
    const limit = [10_000, 2, 0, 2]; // enforced, override key passed

    it('replace a key’s limit, and the reply says so', async () => {
      await redis.hset(ovr('o'), 'action', 'limit', 'limit', '3', 'note', 'a partner', 'by', 'ops');
      expect(await allow(['o'], T0, 'a', 1, ...limit)).toEqual([1, 1, 1, 2, 0, 10_000, 3, 1]);
      await allow(['o'], T0, 'b', 1, ...limit);
      expect(await allow(['o'], T0, 'c', 1, ...limit)).toEqual([1, 1, 3, 0, 0, 10_000, 3, 1]);
      expect(await allow(['o'], T0, 'd', 1, ...limit)).toEqual([0, 0, 3, 0, 10_000, 10_000, 3, 1]);
      // Without the override key, the rule's limit.
      expect((await allow(['o'], T0, 'e', 1, 10_000, 2, 0, 0)).slice(0, 8)).toEqual([0, 0, 3, 0, 10_000, 10_000, 2, 0]);
    });

    it('exempt a key: admitted, its window neither read nor written', async () => {
      await redis.hset(ovr('x'), 'action', 'exempt');
      for (const member of ['a', 'b', 'c']) {
        expect(await allow(['x'], T0, member, 2, ...limit)).toEqual([1, 1, 0, 2, 0, 0, 2, 2]);
      }
      expect(await redis.exists(key('x'))).toBe(0);
    });

    it('block a key until the override expires, Retry-After its remaining time (the window without one)', async () => {
      await redis.hset(ovr('k'), 'action', 'block');
      expect(await allow(['k'], T0, 'a', 1, ...limit)).toEqual([0, 0, 0, 0, 10_000, 0, 0, 3]);
      await redis.pexpire(ovr('k'), 60_000);
      const [allowed, room, , , retryAfterMs, , effective, kind] = await allow(['k'], T0, 'b', 1, ...limit);
      expect({ allowed, room, effective, kind }).toEqual({ allowed: 0, room: 0, effective: 0, kind: 3 });
      expect(retryAfterMs).toBeGreaterThan(59_000);
      expect(retryAfterMs).toBeLessThanOrEqual(60_000);
      expect(await redis.exists(key('k'))).toBe(0);
      // The override expires by itself: the rule applies again.
      await redis.pexpire(ovr('k'), 20);
      await sleep(40);
      expect(await allow(['k'], T0, 'c', 1, ...limit)).toEqual([1, 1, 1, 1, 0, 10_000, 2, 0]);
    });

    it('answer a cost above an overridden limit with the override’s remaining time', async () => {
      await redis.hset(ovr('c'), 'action', 'limit', 'limit', '1');
      await redis.pexpire(ovr('c'), 30_000);
      const [allowed, room, count, , retryAfterMs, , effective, kind] = await allow(['c'], T0, 'a', 2, ...limit);
      expect({ allowed, room, count, effective, kind }).toEqual({
        allowed: 0,
        room: 0,
        count: 0,
        effective: 1,
        kind: 1,
      });
      expect(retryAfterMs).toBeGreaterThan(29_000);
    });

    it('refuse to decide with a malformed override, naming its key', async () => {
      await redis.hset(ovr('m'), 'action', 'slow-down');
      expect(await errorMessageOf(allow(['m'], T0, 'a', 1, ...limit))).toMatch(`ERR invalid override at ${ovr('m')}`);
      await redis.hset(ovr('m'), 'action', 'limit', 'limit', 'many');
      expect(await errorMessageOf(allow(['m'], T0, 'a', 1, ...limit))).toMatch(`ERR invalid override at ${ovr('m')}`);
      expect(await redis.exists(key('m'))).toBe(0);
    });

    it('are read by peek too, which writes nothing', async () => {
      await redis.hset(ovr('p'), 'action', 'limit', 'limit', '1');
      await allow(['p'], T0, 'a', 1, ...limit);
      expect(await peek(['p'], T0 + 1, 1, ...limit)).toEqual([0, 0, 1, 0, 9_999, 9_999, 1, 1]);
      expect(await redis.zcard(key('p'))).toBe(1);
    });

    it('live in the slot of their key', () => {
      for (const limited of ['rl:login:{ip:10.0.0.1}', 'rl:global', 'user:42', '{a}b{c}', 'x'.repeat(300)]) {
        const overrideKey = overrideKeyOf(limited) as string;
        expect({ limited, slot: calculateSlot(overrideKey) }).toEqual({ limited, slot: calculateSlot(limited) });
      }
      // Braces without a valid hash tag: no override key can share the slot.
      for (const limited of ['rl:a{}b', 'rl:a}b', 'rl:a{b']) expect(overrideKeyOf(limited)).toBeUndefined();
    });
  });

  describe('the batch function', () => {
    it('decides each decision as sliding_allow_v2 would, reading the overrides of all with one EXISTS', async () => {
      await redis.hset(ovr('bo'), 'action', 'exempt');
      const decisions = [
        T0,
        'a',
        1,
        1,
        10_000,
        1,
        0,
        2,
        T0 + 1,
        'b',
        1,
        1,
        10_000,
        1,
        0,
        0,
        T0 + 2,
        'c',
        1,
        1,
        10_000,
        1,
        0,
        3,
      ];
      const keys = [key('bo'), ovr('bo'), key('bk'), key('bk'), ovr('bk')];
      const reply = await redis.fcall('sliding_allow_many_v2', keys.length, ...keys, 1000, JSON.stringify(decisions));
      expect(reply).toEqual([
        ...[1, 1, 0, 1, 0, 0, 1, 2], // exempt
        ...[1, 1, 1, 0, 0, 10_000, 1, 0], // recorded
        ...[1, 0, 1, 0, 9_999, 9_999, 1, 0], // a shadow limit: full (b's entry leaves at T0 + 10,001), it would refuse
      ]);
    });
  });

  describe('v1 and v2 on the same keys', () => {
    it('read each other’s logs: a cost is entries v1 counts, a fractional time of v1 lasts its whole window', async () => {
      // v1 takes the caller's time as it is, a fraction included.
      expect(await redis.fcall('sliding_allow_v1', 1, key('vl'), T0 + 0.5, 10_000, 5, 'v1-a')).toEqual([1, 4]);
      expect(await allow(['vl'], T0 + 1, 'v2-b', 2, 10_000, 5, 0, 0)).toEqual([1, 1, 3, 2, 0, 10_000, 5, 0]);
      expect(await redis.zrange(key('vl'), 0, '-1')).toEqual(['v1-a', 'v2-b', 'v2-b#2']);
      expect(await redis.fcall('sliding_allow_v1', 1, key('vl'), T0 + 2, 10_000, 5, 'v1-c')).toEqual([1, 1]);
      expect(await allow(['vl'], T0 + 3, 'v2-d', 2, 10_000, 5, 0, 0)).toEqual(
        [0, 0, 4, 1, 10_000 - 2.5, 9_999, 5, 0].map(Math.ceil),
      );
      expect(await redis.fcall('sliding_allow_v1', 1, key('vl'), T0 + 4, 10_000, 5, 'v1-e')).toEqual([1, 0]);
      expect(await redis.fcall('sliding_allow_v1', 1, key('vl'), T0 + 5, 10_000, 5, 'v1-f')).toEqual([0, 0]);
    });
  });

  describe('invalid arguments', () => {
    it.each([
      ['cost 0', [T0, 'm', 1000, 0, 1000, 5, 0, 0]],
      ['a cost above the limit', [T0, 'm', 1000, 6, 1000, 5, 0, 0]],
      ['a fractional now_ms (v2 takes whole ms)', [T0 + 0.5, 'm', 1000, 1, 1000, 5, 0, 0]],
      ['a fractional window', [T0, 'm', 1000, 1, 1000.5, 5, 0, 0]],
      ['flags above 3', [T0, 'm', 1000, 1, 1000, 5, 0, 4]],
      ['a missing flag', [T0, 'm', 1000, 1, 1000, 5, 0]],
      ['flags naming an override key that is not passed', [T0, 'm', 1000, 1, 1000, 5, 0, 2]],
      ['more than 1000 sub-windows', [T0, 'm', 1000, 1, 10_000, 5, 9, 0]],
      ['a member with a space', [T0, 'a b', 1000, 1, 1000, 5, 0, 0]],
    ])('answers ERR invalid arguments to %s and writes nothing', async (_case, args) => {
      expect(await errorMessageOf(redis.fcall('sliding_allow_v2', 1, key('bad'), ...args))).toBe(
        'ERR invalid arguments',
      );
      expect(await redis.exists(key('bad'))).toBe(0);
    });
  });

  describe('through V2_CONTRACT', () => {
    const rules: SlidingLimitRule[] = [
      { limit: 2, windowMs: 10_000 },
      { limit: 1, windowMs: 10_000, precisionMs: 1000, mode: 'shadow' },
      { limit: 5, windowMs: 10_000, overrides: false },
    ];
    const callOf = (member: string, nowMs: number, overrides = true): AllowCall => ({
      keys: [key('c1'), key('c2'), key('c3')],
      rules,
      nowMs,
      member,
      maxClockSkewMs: 1000,
      overrides,
    });
    const run = (call: AllowCall) => {
      const keys = V2_CONTRACT.allowKeys?.(call) ?? call.keys;
      return redis.fcall(V2_CONTRACT.allowFunction, keys.length, ...keys, ...V2_CONTRACT.allowArguments(call));
    };

    it.each([
      ['with overrides read', true],
      ['without', false],
    ])(
      'builds the KEYS and ARGV of the decision path in one list as allowKeys and allowArguments do, %s',
      (_, overrides) => {
        // A key that cannot carry an override (braces without a tag) is left out of KEYS either way.
        const call = { ...callOf('a', T0 + 0.7, overrides), keys: [key('c1'), 'rl:a{}b', key('c3')] };
        const keys = V2_CONTRACT.allowKeys?.(call) ?? [];
        const keyCount = V2_CONTRACT.allowKeyCount?.(call);
        expect(keyCount).toBe(keys.length);
        expect(V2_CONTRACT.allowKeysAndArguments?.(call, keys.length)).toEqual([
          ...keys,
          ...V2_CONTRACT.allowArguments(call),
        ]);
        expect(keys.length).toBe(overrides ? 4 : 3);
      },
    );

    it('passes the override keys of the rules that read them and decodes effective limits, overrides and shadows', async () => {
      expect(V2_CONTRACT.allowKeys?.(callOf('a', T0))).toEqual([key('c1'), key('c2'), key('c3'), ovr('c1'), ovr('c2')]);
      expect(V2_CONTRACT.allowKeys?.(callOf('a', T0, false))).toEqual([key('c1'), key('c2'), key('c3')]);
      await redis.hset(ovr('c1'), 'action', 'limit', 'limit', '3');
      await redis.hset(ovr('c3'), 'action', 'block'); // not read: the rule opts out
      const first = V2_CONTRACT.parseAllowReply(await run(callOf('a', T0 + 0.7)), rules);
      expect(first.allowed).toBe(true);
      expect(
        first.limits.map(({ allowed, effectiveLimit, override, shadow, wouldRefuse }) => ({
          allowed,
          effectiveLimit,
          override,
          shadow,
          wouldRefuse,
        })),
      ).toEqual([
        { allowed: true, effectiveLimit: 3, override: 'limit', shadow: undefined, wouldRefuse: undefined },
        { allowed: true, effectiveLimit: 1, override: undefined, shadow: true, wouldRefuse: false },
        { allowed: true, effectiveLimit: 5, override: undefined, shadow: undefined, wouldRefuse: undefined },
      ]);
      const second = V2_CONTRACT.parseAllowReply(await run(callOf('b', T0 + 1)), rules);
      expect(second.allowed).toBe(true);
      expect(second.limits[1]).toMatchObject({ allowed: false, shadow: true, wouldRefuse: true, count: 1 });
    });

    it('batches calls with their own override keys', async () => {
      const calls = [callOf('a', T0), { ...callOf('b', T0), overrides: false }];
      const keys = V2_CONTRACT.batch?.keys?.(calls) ?? [];
      expect(keys).toHaveLength(8);
      const batch = V2_CONTRACT.batch;
      const reply = await redis.fcall(batch!.name, keys.length, ...keys, ...batch!.arguments(calls));
      expect(batch!.parseReply(reply, calls).map((outcome) => outcome.allowed)).toEqual([true, true]);
    });

    it('peeks with the override keys when given the keys', async () => {
      await redis.hset(ovr('c1'), 'action', 'exempt');
      const keys = [key('c1'), key('c2'), key('c3')];
      const peekKeys = V2_CONTRACT.peekKeys!(keys, rules);
      const reply = await redis.fcall_ro(
        V2_CONTRACT.peekFunction!,
        peekKeys.length,
        ...peekKeys,
        ...V2_CONTRACT.peekArguments!(T0, rules, 1, keys),
      );
      expect(V2_CONTRACT.parsePeekReply!(reply, rules).limits[0]).toMatchObject({ allowed: true, override: 'exempt' });
    });

    const malformed: [string, unknown][] = [
      ['a reply of the wrong length', [1, 1, 0, 2, 0, 0, 2]],
      ['an allowed flag of 2', [2, 1, 0, 2, 0, 0, 2, 0]],
      ['a room flag of -1', [1, -1, 0, 2, 0, 0, 2, 0]],
      ['an override code of 4', [1, 1, 0, 2, 0, 0, 2, 4]],
      ['a count that is not an integer', [1, 1, 0.5, 2, 0, 0, 2, 0]],
      ['not an array', 'OK'],
    ];

    it.each(malformed)('rejects %s with UnexpectedReplyError', (_case, reply) => {
      expect(() => V2_CONTRACT.parseAllowReply(reply, [{ limit: 2, windowMs: 1000 }])).toThrow(UnexpectedReplyError);
    });

    it.each(malformed)('rejects %s with UnexpectedReplyError on the decision path too', (_case, reply) => {
      const call: AllowCall = {
        keys: [key('m')],
        rules: [{ limit: 2, windowMs: 1000 }],
        nowMs: T0,
        member: 'm',
        maxClockSkewMs: 1000,
      };
      const reader = decisionReaderOf(V2_CONTRACT);
      expect(() => reader.allow(reply, call)).toThrow(UnexpectedReplyError);
      expect(() => reader.allow(reply, call)).toThrow(expect.objectContaining({ reply }));
    });
  });
});
