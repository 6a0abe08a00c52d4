import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { connectShared, uniquePrefix } from '../support/test-redis';
import { ensureLibraries, errorMessageOf, librarySource } from '../support/lua-functions';
import { startRedisServer, RedisServer } from '../support/redis-server';
import { waitUntil } from '../support/wait-for';
import { FUNCTION_VERSIONS } from '../../lib/redis/function-versions';
import { LUA_DIR, MAX_PART_LINES, assembleLibrary, libraryNameOf } from '../../lib/redis/lua-library';
import { parseFunctionList } from '../../lib/redis/reply';

/*
 * The Lua libraries, called directly with FCALL: the contract every application and operator
 * relies on, independent of the TypeScript limiter.
 */
describe('Lua function contracts', () => {
  const T0 = 1_735_660_800_000;
  let redis: Redis;
  let prefix: string;

  beforeAll(async () => {
    redis = connectShared();
    await ensureLibraries(redis);
  });
  afterAll(() => redis.quit());
  beforeEach(() => {
    prefix = uniquePrefix('lua');
  });

  const v1 = (
    key: string,
    now: number | string,
    window: number | string,
    limit: number | string,
    member: string | number,
  ) => redis.fcall('sliding_allow_v1', 1, prefix + key, now, window, limit, member);
  /** sliding_allow_v2 at cost 1 on log limits given as (window_ms, limit) pairs, without overrides. */
  const v2 = (
    keys: string[],
    now: number | string,
    member: string,
    skew: number | string,
    ...pairs: (number | string)[]
  ) =>
    redis
      .fcall('sliding_allow_v2', keys.length, ...keys.map((k) => prefix + k), now, member, skew, 1, ...logLimits(pairs))
      .then(countsOf);
  const peek2 = (keys: string[], now: number | string, ...pairs: (number | string)[]) =>
    redis
      .fcall_ro('sliding_peek_v2', keys.length, ...keys.map((k) => prefix + k), now, 1, ...logLimits(pairs))
      .then(countsOf);

  describe('library identity', () => {
    it.each(FUNCTION_VERSIONS.map((v) => [v.libraryName, v] as const))(
      '%s: #!lua name, FUNCTION LOAD reply and registered functions match the registry',
      async (_name, version) => {
        const source = librarySource(version.version as 'v1' | 'v2');
        expect(libraryNameOf(source)).toBe(version.libraryName);
        const server = await startRedisServer();
        const own = new Redis(server.url);
        try {
          expect(await own.call('FUNCTION', 'LOAD', source)).toBe(version.libraryName);
          const [library] = parseFunctionList(await own.call('FUNCTION', 'LIST'));
          expect(library.functions.sort()).toEqual(
            [version.allowFunction, version.batch?.name, version.peekFunction].filter(Boolean).sort(),
          );
        } finally {
          own.disconnect();
          await server.stop();
        }
      },
    );

    it.each(FUNCTION_VERSIONS.map((v) => [v.libraryName, v] as const))(
      '%s: assembled from every part of its folder, once each, none over the part limit',
      (library, version) => {
        const source = librarySource(version.version as 'v1' | 'v2');
        const entry = readFileSync(join(LUA_DIR, `${library}.lua`), 'utf8');
        const includes = [...entry.matchAll(/^--- @include "([^"]+)"$/gm)].map(([, path]) => path);
        const parts = readdirSync(LUA_DIR, { recursive: true, encoding: 'utf8' })
          .filter((path) => path.startsWith(`${library}/`) && path.endsWith('.lua'))
          .sort();
        expect([...includes].sort()).toEqual(parts);
        const texts = parts.map((part) => readFileSync(join(LUA_DIR, part), 'utf8'));
        const oversized = parts.filter((_, i) => texts[i].split('\n').length - 1 > MAX_PART_LINES);
        expect(oversized).toEqual([]);
        for (const text of texts) expect(source).toContain(text);
        expect(source).not.toMatch(/^--- @include/m);
      },
    );

    describe('the assembler', () => {
      let dir: string;
      beforeEach(() => {
        dir = mkdtempSync(join(tmpdir(), 'lua-parts-'));
      });
      afterEach(() => rmSync(dir, { recursive: true, force: true }));
      const write = (files: Record<string, string>) => {
        for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
      };

      it('includes a part where first named, its own includes too, and drops a second include of it', () => {
        write({
          'lib.lua': '#!lua name=lib\n--- @include "a.lua"\n--- @include "b.lua"\n--- @include "a.lua"\nreturn 1\n',
          'a.lua': 'local a = 1\n',
          'b.lua': '--- @include "a.lua"\nlocal b = a',
        });
        expect(assembleLibrary(dir, 'lib.lua')).toBe('#!lua name=lib\nlocal a = 1\nlocal b = a\nreturn 1\n');
      });

      it('names the including file and the missing part', () => {
        write({ 'lib.lua': '#!lua name=lib\n--- @include "gone.lua"\n' });
        expect(() => assembleLibrary(dir, 'lib.lua')).toThrow(`lib.lua includes "gone.lua", which is not in ${dir}`);
      });

      it(`refuses a part of more than ${MAX_PART_LINES} lines`, () => {
        write({ 'lib.lua': '--- @include "long.lua"\n', 'long.lua': 'local x = 1\n'.repeat(MAX_PART_LINES + 1) });
        expect(() => assembleLibrary(dir, 'lib.lua')).toThrow(
          `long.lua (included by lib.lua) has ${MAX_PART_LINES + 1} lines; a part holds at most ${MAX_PART_LINES}`,
        );
        write({ 'long.lua': 'local x = 1\n'.repeat(MAX_PART_LINES) });
        expect(assembleLibrary(dir, 'lib.lua')).toBe('local x = 1\n'.repeat(MAX_PART_LINES));
      });
    });
  });

  describe('sliding_allow_v1', () => {
    it("follows the article's scenario: limit 5 per 60 s, 8 calls", async () => {
      const replies = [];
      for (let i = 0; i < 8; i++) replies.push(await v1('login', T0 + i, 60_000, 5, `m${i}`));
      expect(replies).toEqual([
        [1, 4],
        [1, 3],
        [1, 2],
        [1, 1],
        [1, 0],
        [0, 0],
        [0, 0],
        [0, 0],
      ]);
      expect(await redis.zcard(prefix + 'login')).toBe(5);
    });

    it('expires an entry exactly window ms old, not one ms earlier', async () => {
      expect(await v1('edge', T0, 1000, 1, 'a')).toEqual([1, 0]);
      expect(await v1('edge', T0 + 999, 1000, 1, 'b')).toEqual([0, 0]);
      expect(await v1('edge', T0 + 1000, 1000, 1, 'c')).toEqual([1, 0]);
      expect(await redis.zrange(prefix + 'edge', 0, '-1')).toEqual(['c']);
    });

    it('sets a TTL of one window on success and writes nothing on rejection', async () => {
      await v1('ttl', T0, 60_000, 1, 'a');
      const ttl = await redis.pttl(prefix + 'ttl');
      expect(ttl).toBeGreaterThan(59_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
      await redis.pexpire(prefix + 'ttl', 30_000);
      await v1('ttl', T0 + 1, 60_000, 1, 'b');
      expect(await redis.pttl(prefix + 'ttl')).toBeLessThanOrEqual(30_000);
      expect(await redis.zcard(prefix + 'ttl')).toBe(1);
    });

    it('counts same-millisecond requests separately when members differ, and once when a member repeats', async () => {
      for (let i = 0; i < 3; i++) await v1('burst', T0, 60_000, 10, `m${i}`);
      expect(await v1('burst', T0, 60_000, 10, 'm0')).toEqual([1, 6]);
      expect(await redis.zcard(prefix + 'burst')).toBe(3);
    });

    it.each([
      ['a missing member', [T0, 1000, 5]],
      ['an empty member', [T0, 1000, 5, '']],
      ['a non-numeric now', ['soon', 1000, 5, 'm']],
      ['NaN now', ['nan', 1000, 5, 'm']],
      ['infinite window', [T0, 'inf', 5, 'm']],
      ['window 0', [T0, 0, 5, 'm']],
      ['a negative window', [T0, -5, 5, 'm']],
      ['limit 0', [T0, 1000, 0, 'm']],
      ['a negative limit', [T0, 1000, -1, 'm']],
      ['a fractional limit', [T0, 1000, 1.5, 'm']],
      ['a non-numeric limit', [T0, 1000, 'five', 'm']],
      ['no arguments', []],
    ])('answers ERR invalid arguments to %s and writes nothing', async (_case, args) => {
      const message = await errorMessageOf(
        redis.fcall('sliding_allow_v1', 1, prefix + 'bad', ...(args as (string | number)[])),
      );
      expect(message).toBe('ERR invalid arguments');
      expect(await redis.exists(prefix + 'bad')).toBe(0);
    });

    it('answers ERR invalid arguments without a key', async () => {
      expect(await errorMessageOf(redis.fcall('sliding_allow_v1', 0, T0, 1000, 5, 'm'))).toBe('ERR invalid arguments');
    });
  });

  describe('sliding_allow_v2', () => {
    it('reports remaining, exact retry-after and reset', async () => {
      expect(await v2(['k'], T0, 'a', 1000, 10_000, 2)).toEqual([1, 1, 1, 0, 10_000]);
      expect(await v2(['k'], T0 + 4000, 'b', 1000, 10_000, 2)).toEqual([1, 2, 0, 0, 10_000]);
      // Full: the oldest entry (T0) leaves at T0 + 10 s; the window is empty after T0 + 4 s + 10 s.
      expect(await v2(['k'], T0 + 6000, 'c', 1000, 10_000, 2)).toEqual([0, 2, 0, 4000, 8000]);
      expect(await v2(['k'], T0 + 9999, 'd', 1000, 10_000, 2)).toEqual([0, 2, 0, 1, 4001]);
      expect(await v2(['k'], T0 + 10_000, 'e', 1000, 10_000, 2)).toEqual([1, 2, 0, 0, 10_000]);
    });

    it('computes retry-after from the right entry when the window holds more than the limit', async () => {
      for (let i = 0; i < 4; i++) await v2(['over'], T0 + i * 100, `m${i}`, 1000, 10_000, 10);
      // The limit is lowered to 2: two of four entries (T0, T0+100) must leave, then one more fits... at T0+200+10 s.
      expect(await v2(['over'], T0 + 500, 'x', 1000, 10_000, 2)).toEqual([0, 4, 0, 9700, 9800]);
    });

    it('decides stacked limits atomically: rejected by one, recorded in none', async () => {
      expect(await v2(['minute', 'day'], T0, 'a', 1000, 60_000, 1, 86_400_000, 10)).toEqual([
        1, 1, 0, 0, 60_000, 1, 9, 0, 86_400_000,
      ]);
      expect(await v2(['minute', 'day'], T0 + 1000, 'b', 1000, 60_000, 1, 86_400_000, 10)).toEqual([
        0, 1, 0, 59_000, 59_000, 1, 9, 0, 86_399_000,
      ]);
      expect(await redis.zcard(prefix + 'day')).toBe(1);
    });

    it('answers a retried member (same arguments) as allowed again without counting it twice', async () => {
      expect(await v2(['retry', 'retry-day'], T0, 'a', 1000, 60_000, 1, 86_400_000, 5)).toEqual([
        1, 1, 0, 0, 60_000, 1, 4, 0, 86_400_000,
      ]);
      // The reply was lost and the caller retries: the window is full now, yet the request stays admitted.
      expect(await v2(['retry', 'retry-day'], T0, 'a', 1000, 60_000, 1, 86_400_000, 5)).toEqual([
        1, 1, 0, 0, 60_000, 1, 4, 0, 86_400_000,
      ]);
      expect(await v2(['retry', 'retry-day'], T0 + 1, 'b', 1000, 60_000, 1, 86_400_000, 5)).toEqual([
        0, 1, 0, 59_999, 59_999, 1, 4, 0, 86_399_999,
      ]);
      expect(await redis.zcard(prefix + 'retry-day')).toBe(1);
    });

    it('lets a retry through the clock-skew check: its original time may have been overtaken since', async () => {
      await v2(['late-retry'], T0, 'a', 1000, 60_000, 5);
      await v2(['late-retry'], T0 + 5000, 'b', 1000, 60_000, 5);
      expect(await v2(['late-retry'], T0, 'a', 1000, 60_000, 5)).toEqual([1, 2, 3, 0, 65_000]);
      expect(await errorMessageOf(v2(['late-retry'], T0, 'c', 1000, 60_000, 5))).toMatch(/^CLOCKSKEW/);
      expect(await redis.zcard(prefix + 'late-retry')).toBe(2);
    });

    it('refuses a caller clock that lags behind the newest entry beyond the tolerance, writing nothing', async () => {
      await v2(['skew'], T0, 'a', 1000, 60_000, 5);
      expect(await v2(['skew'], T0 - 1000, 'b', 1000, 60_000, 5)).toEqual([1, 2, 3, 0, 61_000]);
      const message = await errorMessageOf(v2(['skew'], T0 - 1001, 'c', 1000, 60_000, 5));
      expect(message).toMatch(
        /^CLOCKSKEW now_ms \d+ is 1001 ms behind the newest entry of .*skew \(tolerance 1000 ms\)$/,
      );
      expect(await redis.zcard(prefix + 'skew')).toBe(2);
    });

    it('keeps a key alive until its newest entry leaves the window, even when now lags behind it', async () => {
      await v2(['ttl'], T0, 'a', 5000, 60_000, 5);
      await v2(['ttl'], T0 - 4000, 'b', 5000, 60_000, 5);
      expect(await redis.pttl(prefix + 'ttl')).toBeGreaterThan(63_000);
    });

    it("reads the server's clock when now_ms is *", async () => {
      const before = Date.now();
      const [allowed, count, , , reset] = (await v2(['server'], '*', 'a', 1000, 60_000, 5)) as number[];
      expect([allowed, count, reset]).toEqual([1, 1, 60_000]);
      const [, score] = await redis.zrange(prefix + 'server', 0, '0', 'WITHSCORES');
      expect(Math.abs(Number(score) - before)).toBeLessThan(5000);
    });

    it.each([
      ['a missing member', ['x', T0, '', 1000, 1, 1000, 5, 0, 0]],
      ['a missing tolerance', ['x', T0, 'm', '', 1, 1000, 5, 0, 0]],
      ['a negative tolerance', ['x', T0, 'm', -1, 1, 1000, 5, 0, 0]],
      ['a non-numeric now', ['x', 'later', 'm', 1000, 1, 1000, 5, 0, 0]],
      ['window 0', ['x', T0, 'm', 1000, 1, 0, 5, 0, 0]],
      ['a fractional limit', ['x', T0, 'm', 1000, 1, 1000, 2.5, 0, 0]],
      ['a missing limit', ['x', T0, 'm', 1000, 1]],
      ['one limit too many', ['x', T0, 'm', 1000, 1, 1000, 5, 0, 0, 1000, 5, 0, 0]],
    ])('answers ERR invalid arguments to %s and writes nothing', async (_case, [key, ...args]) => {
      const message = await errorMessageOf(
        redis.fcall('sliding_allow_v2', 1, prefix + key, ...(args as (string | number)[])),
      );
      expect(message).toBe('ERR invalid arguments');
      expect(await redis.exists(prefix + key)).toBe(0);
    });

    it('answers ERR invalid arguments when a key is named twice', async () => {
      expect(await errorMessageOf(v2(['same', 'same'], T0, 'm', 1000, 1000, 5, 2000, 5))).toBe('ERR invalid arguments');
    });
  });

  describe('sliding_allow_many_v2', () => {
    const many = (keys: string[], skew: number | string, decisions: string) =>
      redis.fcall('sliding_allow_many_v2', keys.length, ...keys.map((k) => prefix + k), skew, decisions);

    /** A decision of the batch at cost 1 on log limits given as (window_ms, limit) pairs. */
    const decision = (now: number | string, member: unknown, ...pairs: unknown[]) => [
      now,
      member,
      1,
      pairs.length / 2,
      ...logLimits(pairs),
    ];

    it('decides each decision of the JSON list as sliding_allow_v2 would, in order', async () => {
      // Two one-key decisions on one key, then one two-key decision sharing it.
      const decisions = JSON.stringify([
        ...decision(T0, 'a', 60_000, 2),
        ...decision(T0 + 1, 'b', 60_000, 2),
        ...decision(T0 + 2, 'c', 60_000, 2, 1000, 5),
      ]);
      expect(countsOf(await many(['k', 'k', 'k', 'other'], 1000, decisions), [1, 1, 2])).toEqual([
        ...[1, 1, 1, 0, 60_000],
        ...[1, 2, 0, 0, 60_000],
        ...[0, 2, 0, 59_998, 59_999, 0, 5, 0, 0],
      ]);
      expect(await redis.zrange(prefix + 'k', 0, '-1')).toEqual(['a', 'b']);
      expect(await redis.exists(prefix + 'other')).toBe(0);
    });

    it('reads "*" as the server clock, per decision', async () => {
      const before = Date.now();
      const reply = await many(['s'], 1000, JSON.stringify(decision('*', 'a', 60_000, 5)));
      expect(countsOf(reply)).toEqual([1, 1, 4, 0, 60_000]);
      const [, score] = await redis.zrange(prefix + 's', 0, '0', 'WITHSCORES');
      expect(Math.abs(Number(score) - before)).toBeLessThan(5000);
    });

    it.each<[string, string[], string]>([
      ['text that is not JSON', ['x'], '[1,'],
      ['a JSON object', ['x'], '{"1": 1}'],
      ['an empty list', ['x'], '[]'],
      ['a numeric string for a number', ['x'], JSON.stringify(decision(String(T0), 'm', 1000, 5))],
      ['a number for the member', ['x'], JSON.stringify(decision(T0, 7, 1000, 5))],
      ['null for the window', ['x'], JSON.stringify(decision(T0, 'm', null, 5))],
      ['a fractional limit', ['x'], JSON.stringify(decision(T0, 'm', 1000, 2.5))],
      ['a key count beyond the keys', ['x'], JSON.stringify(decision(T0, 'm', 1000, 5, 1000, 5))],
      ['fewer decisions than keys', ['x', 'y'], JSON.stringify(decision(T0, 'm', 1000, 5))],
      [
        'an invalid second decision',
        ['x', 'y'],
        JSON.stringify([...decision(T0, 'm', 1000, 5), ...decision(T0, '', 1000, 5)]),
      ],
    ])('answers ERR invalid arguments to %s and writes nothing', async (_name, keys, decisions) => {
      expect(await errorMessageOf(many(keys, 1000, decisions))).toBe('ERR invalid arguments');
      for (const key of keys) expect(await redis.exists(prefix + key)).toBe(0);
    });

    it('answers ERR invalid arguments to the arguments of sliding_allow_v2 (one per value)', async () => {
      const message = await errorMessageOf(
        redis.fcall('sliding_allow_many_v2', 1, prefix + 'x', 1000, T0, 'm', 1, 1, 1000, 5, 0, 0),
      );
      expect(message).toBe('ERR invalid arguments');
    });
  });

  describe('v1 and v2 on the same key', () => {
    it('share one window: the limit holds whichever version decides', async () => {
      let admitted = 0;
      for (let i = 0; i < 10; i++) {
        const reply =
          i % 2 === 0
            ? ((await v1('both', T0 + i, 60_000, 6, `a${i}`)) as number[])
            : await v2(['both'], T0 + i, `b${i}`, 1000, 60_000, 6);
        admitted += reply[0];
      }
      expect(admitted).toBe(6);
      expect(await peek2(['both'], T0 + 10, 60_000, 6)).toEqual([0, 6, 0, 59_990, 59_995]);
    });
  });

  describe('sliding_peek_v2', () => {
    it('reports without recording, through FCALL_RO', async () => {
      await v2(['p'], T0, 'a', 1000, 10_000, 2);
      expect(await peek2(['p'], T0 + 1000, 10_000, 2)).toEqual([1, 1, 1, 0, 9000]);
      expect(await peek2(['p'], T0 + 1000, 10_000, 1)).toEqual([0, 1, 0, 9000, 9000]);
      expect(await peek2(['p'], T0 + 10_000, 10_000, 1)).toEqual([1, 0, 1, 0, 0]);
      expect(await redis.zcard(prefix + 'p')).toBe(1);
    });

    it('is refused by FCALL_RO when it is the allow function', async () => {
      expect(
        await errorMessageOf(redis.fcall_ro('sliding_allow_v2', 1, prefix + 'ro', T0, 'm', 1000, 1, 1000, 1, 0, 0)),
      ).toMatch(/write flag/);
    });

    describe('on a replica', () => {
      let primary: RedisServer;
      let replica: RedisServer;
      beforeAll(async () => {
        primary = await startRedisServer();
        replica = await startRedisServer(['--replicaof', '127.0.0.1', String(primary.port)]);
        await waitForReplicaLink(replica);
      });
      afterAll(async () => {
        await replica.stop();
        await primary.stop();
      });

      it("answers FCALL_RO from the replica with the primary's data", async () => {
        const writer = new Redis(primary.url);
        const reader = new Redis(replica.url);
        try {
          await ensureLibraries(writer);
          await writer.fcall('sliding_allow_v2', 1, 'rl:r', T0, 'a', 1000, 1, 10_000, 3, 0, 0);
          expect(await writer.call('WAIT', 1, 5000)).toBe(1);
          const peeked = await reader.fcall_ro('sliding_peek_v2', 1, 'rl:r', T0 + 1, 1, 10_000, 3, 0, 0);
          expect(countsOf(peeked)).toEqual([1, 1, 2, 0, 9999]);
          const write = reader.fcall('sliding_allow_v2', 1, 'rl:r', T0, 'b', 1000, 1, 10_000, 3, 0, 0);
          expect(await errorMessageOf(write)).toMatch(/READONLY/);
        } finally {
          writer.disconnect();
          reader.disconnect();
        }
      });
    });
  });
});

/** v2's quadruples (window_ms, limit, precision_ms 0, flags 0) of log limits given as (window_ms, limit) pairs. */
function logLimits<T>(pairs: readonly T[]): (T | number)[] {
  const limits: (T | number)[] = [];
  for (let i = 0; i < pairs.length; i += 2) limits.push(pairs[i], pairs[i + 1], 0, 0);
  return limits;
}

/**
 * A v2 reply read as {allowed, count, remaining, retry_after_ms, reset_ms per limit}, after checking
 * what these calls (no override, every limit enforced) make of the rest: no override, and no wait
 * for a limit with room. `limitsPerDecision`: a batch reply's decisions, by their limits.
 */
function countsOf(reply: unknown, limitsPerDecision?: number[]): number[] {
  const values = reply as number[];
  const counts: number[] = [];
  let at = 0;
  const decisions = limitsPerDecision ?? [(values.length - 1) / 7];
  for (const limits of decisions) {
    counts.push(values[at]);
    for (let i = 0; i < limits; i++) {
      const [room, count, remaining, retryAfterMs, resetMs, , override] = values.slice(at + 1 + 7 * i, at + 8 + 7 * i);
      expect(override).toBe(0);
      if (room === 1) expect(retryAfterMs).toBe(0);
      counts.push(count, remaining, retryAfterMs, resetMs);
    }
    at += 1 + 7 * limits;
  }
  expect(at).toBe(values.length);
  return counts;
}

/** Waits until a replica has finished its first sync with the primary. */
async function waitForReplicaLink(replica: RedisServer): Promise<void> {
  const client = new Redis(replica.url);
  try {
    await waitUntil(async () => /master_link_status:up/.test(await client.info('replication')), {
      timeoutMs: 10_000,
      intervalMs: 50,
    });
  } finally {
    client.disconnect();
  }
}
