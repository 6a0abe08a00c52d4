import Redis from 'ioredis';
import { SlidingWindowModel } from '../../lib/memory/sliding-window-model';
import { connectShared, uniquePrefix } from '../support/test-redis';
import { ensureLibraries } from '../support/lua-functions';

/*
 * A bounded-memory key's bound "o" as rate_limit_v2 writes it: the oldest sub-window held once
 * sub-windows have left, not the window's first (which may lie in a gap), so that a refusal reads
 * no sub-window that left; the decisions are the same either way, and a bound in a gap is read
 * right too. On Redis, and in the model (lib/memory), which writes the bound the same way.
 * Window 10 s at 1 s precision, limit 2; T0 a multiple of 1,000 ms, sub-window i0 = T0 / 1000.
 * Replies: {allowed, room, count, remaining, retry_after_ms, reset_ms, limit, override}.
 */

/** The calls a scenario makes on its key, and what it reads back. */
interface Store {
  fcall(functionName: string, args: (string | number)[]): Promise<number[]>;
  /** HMGET of the key: each field's value, null when absent. */
  hmget(...fields: string[]): Promise<(string | null)[]>;
  /** HSET of one field of the key. */
  hset(field: string, value: string): Promise<void>;
}

const T0 = 1_735_660_800_000;
let redis: Redis;

beforeAll(async () => {
  redis = connectShared();
  await ensureLibraries(redis);
});
afterAll(() => redis.quit());

function onRedis(key: string): Store {
  return {
    fcall: (functionName, args) => redis.fcall(functionName, 1, key, ...args) as Promise<number[]>,
    hmget: (...fields) => redis.hmget(key, ...fields),
    hset: async (field, value) => void (await redis.hset(key, field, value)),
  };
}

/** The model, its clock at T0 as Redis' barely moves during a scenario (no key expires). */
function inModel(key: string): Store {
  const model = new SlidingWindowModel({ clock: () => T0 });
  return {
    fcall: (functionName, args) => Promise.resolve(model.call(functionName, [key], args.map(String))),
    hmget: (...fields) => {
      const hash = new Map(model.hash(key));
      return Promise.resolve(fields.map((field) => hash.get(field) ?? null));
    },
    hset: (field, value) => Promise.resolve(model.hset(key, [field, value])),
  };
}

describe.each([
  ['on Redis', onRedis],
  ['in the model', inModel],
])('rate_limit_v2: the bound "o" of a bounded-memory key, %s', (_where, storeOf) => {
  const i0 = T0 / 1000;
  const LIMIT = [10_000, 2, 1000];
  let store: Store;

  beforeEach(() => {
    store = storeOf(`${uniquePrefix('lua2o')}{k}`);
  });

  const allow = (now: number, member: string) => store.fcall('sliding_allow_v2', [now, member, 1000, 1, ...LIMIT, 0]);

  /** Sub-windows i0 and i0 + 5 hold a request each; i0 leaves at T0 + 11 s, and the next is admitted. */
  async function gapThenAdmission(): Promise<void> {
    expect((await allow(T0, 'a'))[0]).toBe(1);
    expect((await allow(T0 + 5000, 'b'))[0]).toBe(1);
    expect((await allow(T0 + 11_000, 'c'))[0]).toBe(1);
  }

  it('is written as the oldest sub-window held after a gap, not the first of the window', async () => {
    await gapThenAdmission();
    // The window's first sub-window at T0 + 11 s is i0 + 1: empty, like i0 + 2 .. i0 + 4.
    expect(await store.hmget('t', 'o', 'n')).toEqual(['2', String(i0 + 5), String(i0 + 11)]);
    expect(await store.hmget(String(i0))).toEqual([null]);
  });

  it('answers a refusal after the gap with the retry time of the oldest sub-window held', async () => {
    await gapThenAdmission();
    const at = T0 + 11_500;
    // Full (i0 + 5 and i0 + 11); room when i0 + 5 leaves, at (i0 + 6) s + 10 s - 1 ms.
    expect(await allow(at, 'd')).toEqual([0, 0, 2, 0, T0 + 15_999 - at, T0 + 21_999 - at, 2, 0]);
    expect(await store.hmget('t')).toEqual(['2']);
  });

  it('reads a bound that lies in a gap (the first sub-window of its window) as well', async () => {
    await gapThenAdmission();
    expect(await allow(T0 + 16_000, 'e')).toEqual([1, 1, 2, 0, 0, T0 + 26_999 - (T0 + 16_000), 2, 0]);
    // i0 + 5 has left: the bound is i0 + 11, the oldest held; set it back into the gap after i0 + 5.
    expect(await store.hmget('o')).toEqual([String(i0 + 11)]);
    await store.hset('o', String(i0 + 6));
    const at = T0 + 16_500;
    // The empty i0 + 6 .. i0 + 10 are scanned to find i0 + 11, the first to leave.
    expect(await allow(at, 'f')).toEqual([0, 0, 2, 0, T0 + 21_999 - at, T0 + 26_999 - at, 2, 0]);
    // At T0 + 22 s i0 + 11 has left: admitted, and the bound written as i0 + 16, the oldest held.
    expect((await allow(T0 + 22_000, 'g'))[0]).toBe(1);
    expect(await store.hmget('t', 'o')).toEqual(['2', String(i0 + 16)]);
  });
});
