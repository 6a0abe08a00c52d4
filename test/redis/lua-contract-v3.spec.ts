import Redis from 'ioredis';
import { connectShared, uniquePrefix } from '../support/test-redis';
import { ensureLibraries, errorMessageOf } from '../support/lua-functions';

/*
 * rate_limit_v3 called directly with FCALL: cost per request, the bounded-memory (bucketed) window
 * beside the log, and the log's compatibility with v2. Expected values are worked out by hand in the
 * comments, from the contract in the header of rate_limit_v3.lua.
 */
describe('Lua function contract: rate_limit_v3', () => {
  const T0 = 1_735_660_800_000; // a multiple of 60,000
  const MIN = 60_000;
  const HOUR = 3_600_000;
  let redis: Redis;
  let prefix: string;

  beforeAll(async () => {
    redis = connectShared();
    await ensureLibraries(redis);
  });
  afterAll(() => redis.quit());
  beforeEach(() => {
    prefix = uniquePrefix('lua3');
  });

  /** sliding_allow_v3 with max skew 1000 ms; `limits` are (window_ms, limit, precision_ms) triples. */
  const allow = (
    keys: string[],
    now: number | string,
    member: string,
    cost: number | string,
    ...limits: (number | string)[]
  ) =>
    redis.fcall(
      'sliding_allow_v3',
      keys.length,
      ...keys.map((k) => prefix + k),
      now,
      member,
      1000,
      cost,
      ...limits,
    ) as Promise<number[]>;
  const peek = (keys: string[], now: number | string, cost: number | string, ...limits: (number | string)[]) =>
    redis.fcall_ro('sliding_peek_v3', keys.length, ...keys.map((k) => prefix + k), now, cost, ...limits);
  const allowV2 = (key: string, now: number, member: string, window: number, limit: number) =>
    redis.fcall('sliding_allow_v2', 1, prefix + key, now, member, 1000, window, limit);

  describe('the log with a cost', () => {
    it('admits a request only when its whole cost fits, and reports counts in cost units', async () => {
      expect(await allow(['k'], T0, 'a', 3, 10_000, 5, 0)).toEqual([1, 3, 2, 0, 10_000]);
      // 3 + 3 > 5: one entry of `a` must leave first, at T0 + 10 s.
      expect(await allow(['k'], T0 + 1, 'b', 3, 10_000, 5, 0)).toEqual([0, 3, 2, 9_999, 9_999]);
      expect(await allow(['k'], T0 + 2, 'c', 2, 10_000, 5, 0)).toEqual([1, 5, 0, 0, 10_000]);
      // Full: 5 + 1 - 5 = 1 entry must leave; the oldest, `a`'s, leave at T0 + 10 s.
      expect(await allow(['k'], T0 + 3, 'd', 1, 10_000, 5, 0)).toEqual([0, 5, 0, 9_997, 9_999]);
      expect(await redis.zcard(prefix + 'k')).toBe(5);
    });

    it('writes a request of cost c as c entries that v2 counts, and reads what v2 wrote', async () => {
      await allowV2('shared', T0, 'v2-a', 10_000, 5);
      expect(await allow(['shared'], T0 + 1, 'v3-b', 3, 10_000, 5, 0)).toEqual([1, 4, 1, 0, 10_000]);
      expect(await redis.zrange(prefix + 'shared', '0', '-1')).toEqual(['v2-a', 'v3-b', 'v3-b#2', 'v3-b#3']);
      // v2 sees 4 entries in the window: one more fits, then it is full.
      expect(await allowV2('shared', T0 + 2, 'v2-c', 10_000, 5)).toEqual([1, 5, 0, 0, 10_000]);
      expect(await allowV2('shared', T0 + 3, 'v2-d', 10_000, 5)).toEqual([0, 5, 0, 9_997, 9_999]);
    });

    it('answers a retry (same member) as allowed without recording it again, even when the window is full', async () => {
      await allow(['r'], T0, 'a', 4, 10_000, 5, 0);
      expect(await allow(['r'], T0, 'a', 4, 10_000, 5, 0)).toEqual([1, 4, 1, 0, 10_000]);
      await allow(['r'], T0 + 1, 'b', 1, 10_000, 5, 0);
      // The window is empty again 10 s after its newest entry, `b`'s at T0 + 1.
      expect(await allow(['r'], T0, 'a', 4, 10_000, 5, 0)).toEqual([1, 5, 0, 0, 10_001]);
      expect(await redis.zcard(prefix + 'r')).toBe(5);
    });
  });

  describe('the bucketed window', () => {
    const limit = [10 * MIN, 10, MIN]; // 10 per 10 minutes, 1-minute sub-windows

    it('counts a sub-window in full while it overlaps the window, and reports exact retry and reset times', async () => {
      expect(await allow(['b'], T0 + MIN, 'a', 4, ...limit)).toEqual([1, 4, 6, 0, 11 * MIN - 1]);
      expect(await allow(['b'], T0 + 2 * MIN, 'b', 4, ...limit)).toEqual([1, 8, 2, 0, 11 * MIN - 1]);
      // 8 + 4 > 10. Sub-window 1 ([T0+1m, T0+2m)) stops counting at T0 + 2m + 10m - 1 ms.
      const rejectedAt = T0 + 2 * MIN + 10_000;
      expect(await allow(['b'], rejectedAt, 'c', 4, ...limit)).toEqual([
        1 - 1,
        8,
        2,
        T0 + 12 * MIN - 1 - rejectedAt,
        T0 + 13 * MIN - 1 - rejectedAt,
      ]);
      // One millisecond before, still rejected (the log would have admitted `c` since T0 + 11m).
      expect((await allow(['b'], T0 + 12 * MIN - 2, 'c', 4, ...limit))[0]).toBe(0);
      expect(await allow(['b'], T0 + 12 * MIN - 1, 'c', 4, ...limit)).toEqual([1, 8, 2, 0, 10 * MIN]);
    });

    it('keeps one hash field per sub-window plus the recent ids, each field dropped as it leaves', async () => {
      await allow(['f'], T0, 'a', 1, ...limit);
      await allow(['f'], T0 + 30_000, 'b', 2, ...limit);
      await allow(['f'], T0 + MIN, 'c', 1, ...limit);
      const fields = await redis.hgetall(prefix + 'f');
      expect(fields).toEqual({
        [String(T0 / MIN)]: '3',
        [String(T0 / MIN + 1)]: '1',
        ids: 'c b a',
        p: '60000',
        // The total and the oldest and newest sub-windows: a decision reads these while none has left.
        t: '4',
        o: String(T0 / MIN),
        n: String(T0 / MIN + 1),
      });
      // The key lives until its newest sub-window leaves the window.
      const ttl = await redis.pttl(prefix + 'f');
      expect(ttl).toBeGreaterThan(10 * MIN);
      expect(ttl).toBeLessThanOrEqual(11 * MIN);
      await allow(['f'], T0 + 11 * MIN, 'd', 1, ...limit);
      expect(Object.keys(await redis.hgetall(prefix + 'f')).sort()).toEqual(
        [String(T0 / MIN + 1), String(T0 / MIN + 11), 'ids', 'p', 't', 'o', 'n'].sort(),
      );
    });

    it('recognises a retry among the last 8 requests of a key', async () => {
      await allow(['ids'], T0, 'first', 2, ...limit);
      for (let i = 0; i < 7; i++) await allow(['ids'], T0, `m${i}`, 1, ...limit);
      expect(await allow(['ids'], T0, 'first', 2, ...limit)).toEqual([1, 9, 1, 0, 11 * MIN - 1]);
      await allow(['ids'], T0, 'ninth', 1, ...limit);
      // `first` is no longer among the last 8: its retry counts as a new request (and is rejected, 10 + 2 > 10).
      expect((await allow(['ids'], T0, 'first', 2, ...limit))[0]).toBe(0);
    });

    it('holds 10,000 per hour at 1-minute precision in well under 2 KB, whatever the traffic', async () => {
      const quota = [HOUR, 10_000, MIN];
      for (let minute = 0; minute < 60; minute++) {
        // Request ids as the limiter makes them: 8 characters of prefix and a base-36 counter.
        await allow(['quota'], T0 + minute * MIN, `Ab3dEf9h${(1_000_000 + minute).toString(36)}`, 150, ...quota);
      }
      expect(await redis.hlen(prefix + 'quota')).toBe(65); // 61 sub-windows, ids, p, t, o, n
      // Compact (listpack): the remembered ids are kept within the 64 bytes a listpack value may take.
      expect(await redis.object('ENCODING', prefix + 'quota')).toBe('listpack');
      expect((await redis.hget(prefix + 'quota', 'ids'))!.length).toBeLessThanOrEqual(64);
      expect(await redis.memory('USAGE', prefix + 'quota')).toBeLessThanOrEqual(2048);
    });

    it('accepts limits beyond the log maximum', async () => {
      expect(await allow(['big'], T0, 'a', 5_000_000, HOUR, 100_000_000, MIN)).toEqual([
        1,
        5_000_000,
        95_000_000,
        0,
        HOUR + MIN - 1,
      ]);
    });
  });

  describe('stacked limits of both kinds', () => {
    it('records the cost under every key or under none', async () => {
      const perMinute = [MIN, 3, 0];
      const perDay = [24 * HOUR, 100, HOUR];
      expect(await allow(['m', 'd'], T0, 'a', 2, ...perMinute, ...perDay)).toEqual([
        1,
        2,
        1,
        0,
        MIN,
        2,
        98,
        0,
        25 * HOUR - 1,
      ]);
      // The minute limit has 1 left: a cost of 2 is rejected there and recorded in neither.
      const rejected = await allow(['m', 'd'], T0 + 1000, 'b', 2, ...perMinute, ...perDay);
      expect(rejected.slice(0, 5)).toEqual([0, 2, 1, MIN - 1000, MIN - 1000]);
      expect(rejected.slice(5, 7)).toEqual([2, 98]);
      expect(await redis.zcard(prefix + 'm')).toBe(2);
      expect(await redis.hget(prefix + 'd', String(T0 / MIN / 60))).toBe('2');
    });
  });

  describe('peek', () => {
    it('says whether a request of the given cost would be admitted, and writes nothing', async () => {
      await allow(['p'], T0, 'a', 7, 10_000, 10, 0);
      expect(await peek(['p'], T0 + 1, 3, 10_000, 10, 0)).toEqual([1, 7, 3, 0, 9_999]);
      expect(await peek(['p'], T0 + 1, 4, 10_000, 10, 0)).toEqual([0, 7, 3, 9_999, 9_999]);
      expect(await redis.zcard(prefix + 'p')).toBe(7);
    });
  });

  describe('the batch function', () => {
    it('decides each decision as sliding_allow_v3 would, one after the other', async () => {
      const decisions = [T0, 'a', 2, 1, 10_000, 3, 0, T0 + 1, 'b', 2, 1, 10_000, 3, 0, T0 + 2, 'c', 1, 1, MIN, 5, 1000];
      const reply = await redis.fcall(
        'sliding_allow_many_v3',
        3,
        prefix + 'x{t}',
        prefix + 'x{t}',
        prefix + 'y{t}',
        1000,
        JSON.stringify(decisions),
      );
      // The third decision's sub-window [T0, T0 + 1 s) leaves at T0 + 1 s + 1 min - 1 ms.
      expect(reply).toEqual([1, 2, 1, 0, 10_000, 0, 2, 1, 9_999, 9_999, 1, 1, 4, 0, MIN + 997]);
    });
  });

  it('rounds a bucketed TTL and retry time up when now_ms is fractional (never a refused PEXPIRE, never early)', async () => {
    expect(await allow(['frac'], T0 + 0.5, 'a', 10, 1000, 10, 100)).toEqual([1, 10, 0, 0, 1099]);
    expect(await redis.pttl(prefix + 'frac')).toBeGreaterThan(1000);
    expect(await allow(['frac'], T0 + 1.5, 'b', 1, 1000, 10, 100)).toEqual([0, 10, 0, 1098, 1098]);
  });

  describe('a limit whose window kind or precision changed', () => {
    const hashOf = async (key: string) => redis.hgetall(prefix + key);

    it('log -> bucketed: turns the entries in the window into counts per sub-window, exactly', async () => {
      await allow(['sw'], T0 + 1000, 'a', 3, 10 * MIN, 10, 0);
      await allow(['sw'], T0 + MIN + 5, 'b', 2, 10 * MIN, 10, 0);
      // Peek counts it as the log it still is: empty again 10 minutes after its newest entry.
      expect(await peek(['sw'], T0 + MIN + 6, 5, 10 * MIN, 10, MIN)).toEqual([1, 5, 5, 0, 10 * MIN - 1]);
      expect(await redis.type(prefix + 'sw')).toBe('zset'); // peek wrote nothing
      // 5 + 6 > 10: `a`'s sub-window must leave (at T0 + 11 min - 1 ms) for the cost to fit.
      expect(await allow(['sw'], T0 + MIN + 6, 'c', 6, 10 * MIN, 10, MIN)).toEqual([
        0,
        5,
        5,
        10 * MIN - 7,
        11 * MIN - 7,
      ]);
      expect(await hashOf('sw')).toEqual({
        [String(T0 / MIN)]: '3',
        [String(T0 / MIN + 1)]: '2',
        ids: 'b a',
        p: '60000',
        t: '5',
        o: String(T0 / MIN),
        n: String(T0 / MIN + 1),
      });
      expect(await redis.pttl(prefix + 'sw')).toBeGreaterThan(10 * MIN);
      // A retry of a request the log recorded is still recognised.
      expect((await allow(['sw'], T0 + 1000, 'a', 3, 10 * MIN, 10, MIN))[0]).toBe(1);
      expect(Number((await hashOf('sw'))[String(T0 / MIN)])).toBe(3);
    });

    it('bucketed -> log: goes on counting the hash in its own sub-windows until it expires', async () => {
      await allow(['ws'], T0, 'a', 4, 10 * MIN, 10, MIN);
      expect(await allow(['ws'], T0 + 1, 'b', 7, 10 * MIN, 10, 0)).toEqual([0, 4, 6, 11 * MIN - 1 - 1, 11 * MIN - 2]);
      expect(await allow(['ws'], T0 + 2, 'c', 6, 10 * MIN, 10, 0)).toEqual([1, 10, 0, 0, 11 * MIN - 3]);
      expect(await redis.type(prefix + 'ws')).toBe('hash');
      // Once it has expired, the key starts again as a log.
      await redis.del(prefix + 'ws');
      await allow(['ws'], T0 + 3, 'd', 1, 10 * MIN, 10, 0);
      expect(await redis.type(prefix + 'ws')).toBe('zset');
    });

    it.each([
      ['coarser', 1000, MIN],
      ['finer', MIN, 1000],
    ])(
      'a %s precision re-buckets the counts so that none leaves earlier, and never refuses the clock',
      async (_, from, to) => {
        const window = 10 * MIN;
        await allow(['p'], T0 + 500, 'a', 4, window, 10, from);
        await allow(['p'], T0 + 30_500, 'b', 4, window, 10, from);
        const after = await allow(['p'], T0 + 31_000, 'c', 3, window, 10, to);
        expect(after.slice(0, 3)).toEqual([0, 8, 2]);
        const fields = await hashOf('p');
        expect(fields.p).toBe(String(to));
        // Each old count sits in the new sub-window of its last millisecond (or now): never earlier.
        const moved = Object.entries(fields).filter(([field]) => /^\d+$/.test(field));
        expect(moved.reduce((sum, [, count]) => sum + Number(count), 0)).toBe(8);
        for (const [field] of moved) expect((Number(field) + 1) * to - 1).toBeGreaterThanOrEqual(T0 + 500);
        // Both requests stay counted until at least the log would let them go.
        expect((await allow(['p'], T0 + 500 + window - 1, 'd', 3, window, 10, to))[0]).toBe(0);
      },
    );
  });

  describe('invalid arguments', () => {
    it.each([
      ['cost 0', [T0, 'm', 1000, 0, 1000, 5, 0]],
      ['a fractional cost', [T0, 'm', 1000, 1.5, 1000, 5, 0]],
      ['a cost above the limit', [T0, 'm', 1000, 6, 1000, 5, 0]],
      ['a negative precision', [T0, 'm', 1000, 1, 1000, 5, -1]],
      ['a fractional precision', [T0, 'm', 1000, 1, 1000, 5, 2.5]],
      ['a precision above the window', [T0, 'm', 1000, 1, 1000, 5, 1001]],
      ['more than 1000 sub-windows', [T0, 'm', 1000, 1, 10_000, 5, 9]],
      ['a fractional window with a precision', [T0, 'm', 1000, 1, 1000.5, 5, 10]],
      ['a member with a space', [T0, 'a b', 1000, 1, 1000, 5, 0]],
      ['a member with a tab (ids are kept whitespace-separated)', [T0, 'a\tb', 1000, 1, 1000, 5, 100]],
      ["a member with '#' (a log's cost entries are <member>#n)", [T0, 'a#2', 1000, 1, 1000, 5, 0]],
      ['a cost above 10,000 on a log limit (one entry per unit)', [T0, 'm', 1000, 10_001, 1000, 20_000, 0]],
      ['a limit above 1e15 (a count of 1e17 would reach Redis as "1e+17")', [T0, 'm', 1000, 1, 1000, '1e16', 100]],
      ['a missing precision', [T0, 'm', 1000, 1, 1000, 5]],
    ])('answers ERR invalid arguments to %s and writes nothing', async (_case, args) => {
      const message = await errorMessageOf(redis.fcall('sliding_allow_v3', 1, prefix + 'bad', ...args));
      expect(message).toBe('ERR invalid arguments');
      expect(await redis.exists(prefix + 'bad')).toBe(0);
    });
  });
});
