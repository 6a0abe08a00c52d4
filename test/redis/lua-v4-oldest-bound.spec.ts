import Redis from 'ioredis';
import { SlidingWindowModel } from '../../lib/memory/sliding-window-model';
import { connectShared, uniquePrefix } from '../support/test-redis';
import { ensureLibraries } from '../support/lua-functions';

/*
 * A bounded-memory key's bound "o" as rate_limit_v4 writes it: the oldest sub-window held once
 * sub-windows have left, not the window's first (which may lie in a gap), so that a refusal reads
 * no sub-window that left; the decisions are the same either way, and v3 and v4 read each other's
 * bound. On Redis, and in the model (lib/memory), which writes the bound the same way.
 * Window 10 s at 1 s precision, limit 2; T0 a multiple of 1,000 ms, sub-window i0 = T0 / 1000.
 * Replies: v4 {allowed, room, count, remaining, retry_after_ms, reset_ms, limit, override};
 * v3 {allowed, count, remaining, retry_after_ms, reset_ms}.
 */

/** The calls a scenario makes on its key, and what it reads back. */
interface Store {
  fcall(functionName: string, args: (string | number)[]): Promise<number[]>;
  /** HMGET of the key: each field's value, null when absent. */
  hmget(...fields: string[]): Promise<(string | null)[]>;
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
  };
}

describe.each([
  ['on Redis', onRedis],
  ['in the model', inModel],
])('rate_limit_v4: the bound "o" of a bounded-memory key, %s', (_where, storeOf) => {
  const i0 = T0 / 1000;
  const LIMIT = [10_000, 2, 1000];
  let store: Store;

  beforeEach(() => {
    store = storeOf(`${uniquePrefix('lua4o')}{k}`);
  });

  const v4 = (now: number, member: string) => store.fcall('sliding_allow_v4', [now, member, 1000, 1, ...LIMIT, 0]);
  const v3 = (now: number, member: string) => store.fcall('sliding_allow_v3', [now, member, 1000, 1, ...LIMIT]);

  /** Sub-windows i0 and i0 + 5 hold a request each; i0 leaves at T0 + 11 s, and the next is admitted. */
  async function gapThenAdmission(): Promise<void> {
    expect((await v4(T0, 'a'))[0]).toBe(1);
    expect((await v4(T0 + 5000, 'b'))[0]).toBe(1);
    expect((await v4(T0 + 11_000, 'c'))[0]).toBe(1);
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
    expect(await v4(at, 'd')).toEqual([0, 0, 2, 0, T0 + 15_999 - at, T0 + 21_999 - at, 2, 0]);
    expect(await store.hmget('t')).toEqual(['2']);
  });

  it('is read by v3, and v4 reads the bound v3 writes (the first of its window, in a gap)', async () => {
    await gapThenAdmission();
    // v3 at T0 + 16 s: i0 + 5 has left; it counts i0 + 11 and records in i0 + 16.
    expect(await v3(T0 + 16_000, 'e')).toEqual([1, 2, 0, 0, T0 + 26_999 - (T0 + 16_000)]);
    expect(await store.hmget('o')).toEqual([String(i0 + 6)]);
    const at = T0 + 16_500;
    // v4 scans the empty i0 + 6 .. i0 + 10 to find i0 + 11, the first to leave.
    expect(await v4(at, 'f')).toEqual([0, 0, 2, 0, T0 + 21_999 - at, T0 + 26_999 - at, 2, 0]);
    // At T0 + 22 s i0 + 11 has left: v4 admits, and writes its bound as i0 + 16, the oldest held.
    expect((await v4(T0 + 22_000, 'g'))[0]).toBe(1);
    expect(await store.hmget('t', 'o')).toEqual(['2', String(i0 + 16)]);
  });
});
