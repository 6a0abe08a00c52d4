import fc from 'fast-check';
import type { SlidingWindowModel } from '../../lib/memory/sliding-window-model';
import type { TtlObservation, VirtualTimeRedis } from '../support/virtual-time-redis';

/*
 * What the model-vs-Redis specs share: fast-check settings, the TTL comparison, error texts, and the
 * garbage that ARGV parsing must get right.
 */

export const T0 = 1_735_660_800_000;

/** fast-check settings: modest runs, the failing case in full, replayable from the environment. */
export function checkParameters(numRuns: number): fc.Parameters<unknown> {
  const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
  return { numRuns, verbose: fc.VerbosityLevel.Verbose, seed, path: process.env.FC_PATH };
}

/**
 * Whether Redis' PTTL, read in the transaction that set it, shows the TTL the model set: exactly when
 * the transaction ran within one millisecond, otherwise up to the time it took (plus one) less.
 */
export function sameTtl(pttl: bigint, modelPttl: bigint, spanMs: number): boolean {
  return pttl === modelPttl || (spanMs > 0 && pttl < modelPttl && pttl >= modelPttl - BigInt(spanMs + 1));
}

/**
 * A TTL of a millisecond or two can run out in Redis' real time before the transaction that set it
 * gets to PERSIST it (when the server is slow): the run says nothing then, and is discarded.
 */
export function discardIfExpiredInRealTime(pttl: number, modelPttl: number, spanMs: number): void {
  fc.pre(!(pttl === -2 && modelPttl >= 0 && modelPttl <= spanMs + 1));
}

/** Redis' error text, without the "script: …, on @user_function:48." that locates it in the Lua. */
export const errorText = (error: unknown) => (error as Error).message.replace(/ script: .*$/s, '');

/** What tonumber must get right: spaces, signs, hex, exponents, inf/nan, overflow, NUL, junk. */
export const GARBAGE = [
  '',
  ' ',
  'nan',
  '-nan',
  'NaN',
  'nan(1)',
  'inf',
  '-inf',
  'Infinity',
  'infinit',
  '-0',
  '0',
  '+0',
  '1.5',
  '.5',
  '5.',
  '1e3',
  '1E3',
  ' 5 ',
  '\t7\n',
  '5 x',
  '5abc',
  '0x10',
  '0X1F',
  '0x',
  '0x1p4',
  '0x.8',
  '1e400',
  '-1e400',
  '1e-400',
  '1e17',
  '1e20',
  '1e300',
  '-1e300',
  '99999999999999984',
  '9007199254740993',
  '-1',
  '-5',
  'abc',
  ' * ',
  '**',
  '5\u00000',
  '\u00005',
  '+5',
  '- 5',
  '1,5',
  '١',
];
export const garbage = fc.constantFrom(...GARBAGE);
/** Mostly `valid` (`validWeight` to 1), now and then garbage. */
export const mixed = (valid: fc.Arbitrary<string>, validWeight = 12) =>
  fc.oneof({ weight: validWeight, arbitrary: valid }, { weight: 1, arbitrary: garbage });

/** JSON's number grammar: texts matching it go into a batch's JSON as numbers, verbatim (1e400 too). */
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
/**
 * One field of a batch decision as JSON: a number where the text is one, else (and one time in
 * `stringOneIn` anyway) a string.
 */
export const jsonField = (arg: fc.Arbitrary<string>, stringOneIn = 16) =>
  fc
    .tuple(arg, fc.nat(stringOneIn - 1))
    .map(([text, roll]) => (JSON_NUMBER.test(text) && roll > 0 ? text : JSON.stringify(text)));

/** One call of a library function with its raw KEYS (already prefixed) and ARGV. */
export interface RawFunctionCall {
  fn: string;
  args: string[];
  readOnly: boolean;
}

/** What a call answered: its reply as text, or its error. */
export interface RawAnswer {
  reply?: string[];
  error?: string;
}

/**
 * Runs one call on Redis (FCALL / FCALL_RO, or EVAL of `script` in script mode) and on the model,
 * requires the same reply or error, and the TTLs Redis set (seen in the same transaction) to be the
 * model's. Returns the model's answer, for the caller's coverage counts.
 */
export async function compareCall(
  redis: VirtualTimeRedis,
  model: SlidingWindowModel,
  call: RawFunctionCall,
  keys: string[],
  context: string,
  script?: string,
): Promise<RawAnswer> {
  let fromRedis: RawAnswer;
  try {
    const reply =
      script !== undefined
        ? await redis.observe('EVAL', [script, keys.length, ...keys, ...call.args])
        : await redis.observe(call.readOnly ? 'FCALL_RO' : 'FCALL', [call.fn, keys.length, ...keys, ...call.args]);
    fromRedis = { reply: (reply as unknown[]).map(String) };
  } catch (error) {
    fromRedis = { error: errorText(error) };
  }
  let fromModel: RawAnswer;
  try {
    const readOnly = call.readOnly && script === undefined;
    fromModel = { reply: model.call(call.fn, keys, call.args, readOnly).map((n) => BigInt(n).toString()) };
  } catch (error) {
    fromModel = { error: (error as Error).message };
  }
  expect({ context, ...fromRedis }).toEqual({ context, ...fromModel });

  for (const { key, pttlText, spanMs } of redis.takeObservations()) {
    discardIfExpiredInRealTime(Number(pttlText), model.pttl(key), spanMs);
    // Exact integers: TTLs here reach 1e17 ms.
    const pttl = BigInt(pttlText);
    const modelPttl = BigInt(model.pttl(key));
    // -1: the call set no TTL (the key was persisted by an earlier call, or was never written).
    const matches = pttl === -1n || sameTtl(pttl, modelPttl, spanMs);
    expect({ context, key, pttl: matches ? 'as in the model' : pttlText }).toEqual({
      context,
      key,
      pttl: 'as in the model',
    });
  }
  return fromModel;
}

/** How a property test moves its clock between steps (both model-vs-Redis specs). */
export type TimeMove =
  | { kind: 'same' }
  | { kind: 'forward'; ms: number }
  /**
   * Exactly one window (± 1 ms) after an entry of the step's (first) key: the moment that entry
   * leaves the window. Without entries, one window after an earlier step's time.
   */
  | { kind: 'boundary'; pick: number; offsetMs: number }
  /** Back from the latest time so far: within `maxClockSkewMs`, or beyond it. */
  | { kind: 'back'; ms: number; beyondTolerance: boolean };

export const timeMove: fc.Arbitrary<TimeMove> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'same' as const }) },
  {
    weight: 4,
    arbitrary: fc
      .oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 6000 }))
      .map((ms) => ({ kind: 'forward' as const, ms })),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('boundary' as const),
      pick: fc.nat(),
      offsetMs: fc.constantFrom(-1, 0, 0, 1),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('back' as const), ms: fc.nat(2000), beyondTolerance: fc.constant(false) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('back' as const),
      ms: fc.integer({ min: 1, max: 3000 }),
      beyondTolerance: fc.constant(true),
    }),
  },
);

/** The time of the next step, by its move: `leaving` are the moments entries or sub-windows of the step's key leave. */
export function nextTime(
  move: TimeMove,
  now: number,
  latest: number,
  times: number[],
  windowMs: number,
  leaving: number[],
  maxClockSkewMs: number,
): number {
  switch (move.kind) {
    case 'same':
      return now;
    case 'forward':
      return now + move.ms;
    case 'boundary':
      if (leaving.length > 0) return leaving[move.pick % leaving.length] + move.offsetMs;
      return (times.length > 0 ? times[move.pick % times.length] : now) + windowMs + move.offsetMs;
    case 'back':
      return move.beyondTolerance ? latest - maxClockSkewMs - move.ms : latest - (move.ms % (maxClockSkewMs + 1));
  }
}

// ------------------------------------------------------------------------------------------------
// For model-vs-redis-v2.spec.ts: keys compared whole, replies settled, TTLs followed, limits drawn
// ------------------------------------------------------------------------------------------------

/** A key's fields as HGETALL lists them, flat. */
export async function hgetall(client: VirtualTimeRedis, key: string): Promise<string[]> {
  return ((await client.call('HGETALL', key)) as unknown[]).map(String);
}

/** A key's entries as ZRANGE WITHSCORES lists them (scores as numbers, -0 as 0). */
export async function zentries(client: VirtualTimeRedis, key: string): Promise<{ member: string; score: number }[]> {
  const flat = (await client.zrange(key, 0, '-1', 'WITHSCORES')) as string[];
  const entries = [];
  for (let i = 0; i < flat.length; i += 2) entries.push({ member: flat[i], score: Number(flat[i + 1]) + 0 });
  return entries;
}

/**
 * Every key under `pattern`: the same keys, types, entries and fields in Redis and the model. A small
 * hash (listpack) lists its fields in the order they were added, in both: that order is compared too.
 */
export async function expectSameKeys(
  client: VirtualTimeRedis,
  model: SlidingWindowModel,
  pattern: string,
): Promise<void> {
  const keys = (await client.keys(pattern)).sort();
  expect(keys).toEqual(model.keys());
  for (const key of keys) {
    const type = await client.type(key);
    expect({ key, type }).toEqual({ key, type: model.type(key) });
    if (type === 'zset') {
      expect({ key, entries: await zentries(client, key) }).toEqual({
        key,
        entries: model.entries(key).map(({ member, score }) => ({ member, score: score + 0 })),
      });
    } else {
      const fields = await hgetall(client, key);
      const modelFields = model.hash(key);
      if ((await client.object('ENCODING', key)) === 'listpack') {
        expect({ key, fields }).toEqual({ key, fields: modelFields.flat() });
      } else {
        expect({ key, fields: pairsOf(fields).sort() }).toEqual({ key, fields: modelFields.sort() });
      }
    }
  }
}

export function pairsOf(flat: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i], flat[i + 1]]);
  return pairs;
}

// Long windows too: keys that live through many steps, with more than 8 requests in their ids.
export const windowMsArb = fc.oneof(
  fc.integer({ min: 1, max: 20 }),
  fc.integer({ min: 1, max: 5000 }),
  fc.integer({ min: 5000, max: 100_000 }),
);

/** Precisions a window takes (at most 1000 sub-windows), its divisors more often than the rest. */
export function precisionOf(windowMs: number): fc.Arbitrary<number> {
  const smallest = Math.ceil(windowMs / 1000);
  const divisors = [];
  for (let p = smallest; p <= windowMs; p++) if (windowMs % p === 0) divisors.push(p);
  return fc.oneof(fc.constantFrom(...divisors), fc.integer({ min: smallest, max: windowMs }));
}

/** A call's reply, or its error text, so both sides compare with toEqual. */
export async function settle(call: () => Promise<unknown>): Promise<{ reply?: unknown; error?: string }> {
  try {
    return { reply: await call() };
  } catch (error) {
    return { error: errorText(error) };
  }
}

/**
 * The TTL each call left in Redis equals the model's (to the millisecond when observable exactly);
 * `redis.expiresAt` follows it, so that the test's clock expires Redis' keys as the model's. A key
 * without a TTL in the model (an override) has none in Redis either.
 */
export function checkTtls(
  redis: VirtualTimeRedis,
  observations: TtlObservation[],
  model: SlidingWindowModel,
  redisNowMs: number,
  context: string,
): void {
  for (const { key, pttl, spanMs } of observations) {
    const modelPttl = model.pttl(key);
    discardIfExpiredInRealTime(pttl, modelPttl, spanMs);
    if (modelPttl === -2) {
      redis.expiresAt.delete(key); // gone in the model; the existence check compares Redis
      continue;
    }
    if (pttl === -1) {
      // The call set no TTL (a rejection, a retry, a peek): the key keeps the expiry it had, in both.
      expect({ context, key, expiresAt: redis.expiresAt.get(key) }).toEqual({
        context,
        key,
        expiresAt: modelPttl === -1 ? undefined : redisNowMs + modelPttl,
      });
      continue;
    }
    const matches = sameTtl(BigInt(pttl), BigInt(modelPttl), spanMs);
    expect({ context, key, pttl: matches ? modelPttl : pttl }).toEqual({ context, key, pttl: modelPttl });
    redis.expiresAt.set(key, redisNowMs + modelPttl);
  }
}
