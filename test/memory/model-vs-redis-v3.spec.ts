import fc from 'fast-check';
import { SlidingWindowModel } from '../../lib/memory/sliding-window-model';
import { readLibrarySource, toScript } from '../../lib/redis/lua-library';
import { ensureLibraries } from '../support/lua-functions';
import { useOwnRedisServer } from '../support/own-redis';
import { VirtualTimeRedis } from '../support/virtual-time-redis';
import {
  T0,
  checkParameters,
  discardIfExpiredInRealTime,
  errorText,
  garbage,
  jsonField,
  mixed,
  sameTtl,
} from './redis-comparison';

/*
 * rate_limit_v3 (a cost per request; the log or the bucketed window per limit): the model against
 * the Lua on a real redis-server, and the promises of the bucketed window checked on Redis.
 *
 * 1. Random ARGV, garbage included, for the v3 functions (and v1 / v2 on the same keys, which meet
 *    v3's hashes), through FCALL / FCALL_RO and EVAL and the model: same replies, errors, keys, TTLs.
 * 2. Random sequences of well-formed calls on keys with fixed limits (single, stacked, batch, peek,
 *    retries with their original now_ms, v2 calls on the same keys), time going forward and back,
 *    keys expiring on the test's clock: same replies, keys, entries, fields and TTLs at every step.
 * 3. On Redis alone: never over-admits, under-admits at most by one sub-window, Retry-After exact
 *    and never early; v2 and v3 share a log key's history; memory per bucketed key.
 *
 * A failure prints fast-check's seed and path; replay it with FC_SEED=<seed> FC_PATH=<path>.
 */

const own = useOwnRedisServer();
let redis: VirtualTimeRedis;
/** Same server, integers as strings: replies of any size compare exactly. */
let rawRedis: VirtualTimeRedis;

beforeAll(async () => {
  redis = own.connect((url) => new VirtualTimeRedis(url));
  rawRedis = own.connect((url) => new VirtualTimeRedis(url, { stringNumbers: true }));
  await ensureLibraries(redis);
});

const V3_FUNCTIONS = ['sliding_allow_v3', 'sliding_allow_many_v3', 'sliding_peek_v3'] as const;
const scripts = new Map(
  [
    ...V3_FUNCTIONS.map((fn) => ['rate_limit_v3.lua', fn] as const),
    ['rate_limit_v2.lua', 'sliding_allow_v2'] as const,
    ['rate_limit_v2.lua', 'sliding_peek_v2'] as const,
    ['rate_limit_v1.lua', 'sliding_allow_v1'] as const,
  ].map(([file, fn]) => [fn, toScript(readLibrarySource(file), fn).source]),
);

/** A key's fields as HGETALL lists them, flat. */
async function hgetall(client: VirtualTimeRedis, key: string): Promise<string[]> {
  return ((await client.call('HGETALL', key)) as unknown[]).map(String);
}

/** A key's entries as ZRANGE WITHSCORES lists them (scores as numbers, -0 as 0). */
async function zentries(client: VirtualTimeRedis, key: string): Promise<{ member: string; score: number }[]> {
  const flat = (await client.zrange(key, 0, '-1', 'WITHSCORES')) as string[];
  const entries = [];
  for (let i = 0; i < flat.length; i += 2) entries.push({ member: flat[i], score: Number(flat[i + 1]) + 0 });
  return entries;
}

/**
 * Every key under `pattern`: the same keys, types, entries and fields in Redis and the model. A small
 * hash (listpack) lists its fields in the order they were added, in both: that order is compared too.
 */
async function expectSameKeys(client: VirtualTimeRedis, model: SlidingWindowModel, pattern: string): Promise<void> {
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

function pairsOf(flat: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i], flat[i + 1]]);
  return pairs;
}

// ------------------------------------------------------------------------------------------------
// 1. Raw calls: random ARGV, garbage included
// ------------------------------------------------------------------------------------------------

/** The model's clock in the raw runs: fixed, so only a PEXPIRE ≤ 0 makes a key expire. */
const MODEL_NOW = 1_000_000;

/** Keys a and b are mostly logs, c and d mostly bucketed: each kind is mostly used as it was created. */
const rawKey = fc.constantFrom('a', 'b', 'c', 'd');
const LOG_KEYS = new Set(['a', 'b']);

// Times that repeat and sit on, just before and just after windows' and sub-windows' boundaries
// (T0 is a multiple of every precision below); now and then a fractional one.
const OFFSETS = [0, 0, 1, 2, 4, 5, 6, 99, 100, 101, 249, 250, 251, 999, 1000, 1001, 4999, 5000, 5001, -1, -5, -1000];
const TIMES = fc.oneof(
  { weight: 20, arbitrary: fc.constantFrom(...OFFSETS).map((d) => String(T0 + d)) },
  { weight: 1, arbitrary: fc.constantFrom(...OFFSETS).map((d) => String(T0 + d + 0.5)) },
);
/** (window_ms, precision_ms) of a bucketed limit. */
const BUCKETS = fc.constantFrom(
  ['1000', '100'],
  ['1000', '1000'],
  ['5000', '1000'],
  ['100', '1'],
  ['100', '7'],
  ['5', '1'],
  ['5', '5'],
  ['1000', '250'],
  ['1', '1'],
  ['5000', '5'],
  ['1000', '0x64'], // 100
  ['1e3', '1e2'],
);
/** Just out of range, or the log spelled otherwise. */
const ODD_BUCKETS = fc.constantFrom(
  ['5000', '4'], // 1250 sub-windows
  ['1000', '1001'], // longer than the window
  ['2.5', '1'], // a fractional window
  ['1000', '0.5'],
  ['1000', '-1'],
  ['1000', '-0'], // the log
);
const LOG_WINDOWS = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('1', '5', '100', '1000', '5000') },
  { weight: 1, arbitrary: fc.constantFrom('0.5', '2.5', '1e3', '9007199254740993', '1e17', '1e300') },
);
const MEMBERS = fc.constantFrom('m1', 'm2', 'm3', 'm4');
const ODD_MEMBERS = fc.constantFrom('', ' ', 'a b', 'ü', '\u0000', 'm1#2', '\t', 'm1\tm2');

/**
 * The arguments of one call: `clean` ones are all valid but for their limits' kind now and then (the
 * calls then get past the argument checks, to the decisions, CLOCKSKEW and WRONGTYPE); the others
 * take garbage in any field (a v3 call has 4 + 3 per key, a batch several times that).
 */
function argumentsOf(clean: boolean) {
  const maybe = (valid: fc.Arbitrary<string>) => (clean ? valid : mixed(valid));
  // Costs stay small: a cost of c is c entries in a log (1e3 from the garbage at most).
  const cost = clean ? fc.constantFrom('1', '1', '1', '2', '0x2') : mixed(fc.constantFrom('1', '1', '2', '3'));
  const limit = clean
    ? fc.constantFrom('2', '3', '5', '2', '3', '5', '1e20')
    : mixed(fc.constantFrom('1', '2', '3', '5', '1e20'));
  const bucket = clean ? BUCKETS : fc.oneof({ weight: 6, arbitrary: BUCKETS }, { weight: 1, arbitrary: ODD_BUCKETS });
  const log = fc.tuple(maybe(LOG_WINDOWS), limit).map(([window, l]) => [window, l, '0']);
  const bucketed = fc.tuple(bucket, limit).map(([[window, precision], l]) => [window, l, precision]);
  /** (window_ms, limit, precision_ms) for a key: mostly the key's own kind. */
  const tripleFor = (key: string) => {
    const [ownKind, otherKind] = LOG_KEYS.has(key) ? [log, bucketed] : [bucketed, log];
    return fc.oneof({ weight: 15, arbitrary: ownKind }, { weight: 1, arbitrary: otherKind });
  };
  return {
    time: maybe(TIMES),
    member: clean ? MEMBERS : fc.oneof({ weight: 10, arbitrary: MEMBERS }, { weight: 1, arbitrary: ODD_MEMBERS }),
    skew: maybe(fc.constantFrom('0', '10', '1000')),
    cost,
    limit,
    logWindow: maybe(LOG_WINDOWS),
    triples: (keys: string[]) => fc.tuple(...keys.map(tripleFor)).map((triples) => triples.flat()),
    keys: (maxLength: number) =>
      clean
        ? fc.uniqueArray(rawKey, { minLength: 1, maxLength })
        : fc.oneof(
            { weight: 6, arbitrary: fc.uniqueArray(rawKey, { minLength: 1, maxLength }) },
            { weight: 1, arbitrary: fc.array(rawKey, { minLength: 2, maxLength }) },
          ),
    /** One field of a batch's JSON: a number, or now and then (not when clean) a string. */
    json: (arg: fc.Arbitrary<string>) => (clean ? jsonField(arg, 1_000_000) : jsonField(arg, 30)),
  };
}

type RawFunction = (typeof V3_FUNCTIONS)[number] | 'sliding_allow_v2' | 'sliding_peek_v2' | 'sliding_allow_v1';

interface RawCall {
  fn: RawFunction;
  keys: string[];
  args: string[];
  readOnly: boolean;
  /** Decisions of a well-formed batch call. */
  decisions?: number;
}

function wellFormedCall(clean: boolean): fc.Arbitrary<Omit<RawCall, 'readOnly'>> {
  const a = argumentsOf(clean);
  const decision = a.keys(2).chain((keys) =>
    fc
      .tuple(
        a.json(a.time),
        a.member.map((member) => JSON.stringify(member)),
        a.json(a.cost),
        a.json(clean ? fc.constant(String(keys.length)) : mixed(fc.constant(String(keys.length)))),
        a.triples(keys).chain((t) => fc.tuple(...t.map((text) => a.json(fc.constant(text))))),
      )
      .map(([now, member, cost, count, rest]) => ({ keys, fields: [now, member, cost, count, ...rest] })),
  );
  return fc.oneof(
    {
      weight: 6,
      arbitrary: a.keys(3).chain((keys) =>
        fc.tuple(a.time, a.member, a.skew, a.cost, a.triples(keys)).map(([now, member, skew, cost, rest]) => ({
          fn: 'sliding_allow_v3' as const,
          keys,
          args: [now, member, skew, cost, ...rest],
        })),
      ),
    },
    {
      weight: 2,
      arbitrary: fc.uniqueArray(rawKey, { minLength: 1, maxLength: 3 }).chain((keys) =>
        fc.tuple(a.time, a.cost, a.triples(keys)).map(([now, cost, rest]) => ({
          fn: 'sliding_peek_v3' as const,
          keys,
          args: [now, cost, ...rest],
        })),
      ),
    },
    {
      weight: 4,
      arbitrary: fc.tuple(a.skew, fc.array(decision, { minLength: 1, maxLength: 4 })).map(([skew, decisions]) => ({
        fn: 'sliding_allow_many_v3' as const,
        keys: decisions.flatMap((d) => d.keys),
        args: [skew, `[${decisions.flatMap((d) => d.fields).join(',')}]`],
        decisions: decisions.length,
      })),
    },
    // v2 and v1 on the same keys: a log key is theirs too, a bucketed one is WRONGTYPE.
    {
      weight: 2,
      arbitrary: fc.uniqueArray(rawKey, { minLength: 1, maxLength: 2 }).chain((keys) =>
        fc
          .tuple(
            a.time,
            a.member,
            a.skew,
            fc.array(fc.tuple(a.logWindow, a.limit), { minLength: keys.length, maxLength: keys.length }),
          )
          .map(([now, member, skew, pairs]) => ({
            fn: 'sliding_allow_v2' as const,
            keys,
            args: [now, member, skew, ...pairs.flat()],
          })),
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(rawKey, a.time, a.logWindow, a.limit)
        .map(([key, ...args]) => ({ fn: 'sliding_peek_v2' as const, keys: [key], args })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(rawKey, a.time, a.logWindow, a.limit, a.member)
        .map(([key, ...args]) => ({ fn: 'sliding_allow_v1' as const, keys: [key], args })),
    },
  );
}

const anyArg = fc.oneof(
  TIMES,
  LOG_WINDOWS,
  BUCKETS.map(([, precision]) => precision),
  fc.constantFrom('1', '2', '3', '5', '1e20'),
  MEMBERS,
  ODD_MEMBERS,
  garbage,
);
const freeForm: fc.Arbitrary<Omit<RawCall, 'readOnly'>> = fc.record({
  fn: fc.constantFrom(...V3_FUNCTIONS),
  keys: fc.array(rawKey, { maxLength: 3 }),
  args: fc.array(anyArg, { maxLength: 11 }),
});
const rawCall: fc.Arbitrary<RawCall> = fc
  .tuple(
    fc.oneof(
      { weight: 12, arbitrary: wellFormedCall(true) },
      { weight: 4, arbitrary: wellFormedCall(false) },
      { weight: 1, arbitrary: freeForm },
    ),
    fc.oneof({ weight: 8, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  )
  .map(([call, readOnly]) => ({ ...call, readOnly: readOnly || call.fn.startsWith('sliding_peek') }));

/**
 * Bucketed limits only, with costs and limits far beyond 2^53: sums that doubles round, in the
 * order HGETALL lists the fields, and remaining counts the reply cannot hold.
 */
const hugeCall: fc.Arbitrary<RawCall> = fc
  .tuple(
    fc.uniqueArray(fc.constantFrom('c', 'd'), { minLength: 1, maxLength: 2 }),
    fc.constantFrom(...OFFSETS).map((d) => String(T0 + d)),
    fc.constantFrom('999999999999999', '1e15', '123456789012345', '1'),
    fc.constantFrom('1e20', '9007199254740993', '18446744073709551615', '1e16'),
  )
  .map(([keys, now, cost, limit]) => ({
    fn: 'sliding_allow_v3' as const,
    keys,
    args: [now, `m${now.slice(-3)}`, '1000', cost, ...keys.flatMap(() => ['1000', limit, '100'])],
    readOnly: false,
  }));

interface RawCoverage {
  replies: number;
  /** Replies of calls that found or left a hash. */
  bucketedReplies: number;
  /** Batch calls answered with a reply of two decisions or more. */
  batchReplies: number;
  invalidArguments: number;
  clockSkew: number;
  wrongType: number;
  /** Errors raised by a command inside the Lua after it wrote (PEXPIRE of a fractional TTL). */
  commandErrors: number;
  /** Reply integers that only the C cast explains (the minimum 64-bit integer). */
  castOverflow: number;
}

const noRawCoverage = (): RawCoverage => ({
  replies: 0,
  bucketedReplies: 0,
  batchReplies: 0,
  invalidArguments: 0,
  clockSkew: 0,
  wrongType: 0,
  commandErrors: 0,
  castOverflow: 0,
});

async function runRawCalls(calls: RawCall[], viaScript: boolean, coverage: RawCoverage): Promise<void> {
  await rawRedis.flushdb();
  rawRedis.takeObservations();
  const model = new SlidingWindowModel({ clock: () => MODEL_NOW });
  for (const [index, call] of calls.entries()) {
    const keys = call.keys.map((key) => `raw:{t}:${key}`);
    const context = `call ${index}: ${JSON.stringify({ ...call, keys })}`;
    let fromRedis: unknown;
    try {
      const reply = viaScript
        ? await rawRedis.observe('EVAL', [scripts.get(call.fn) as string, keys.length, ...keys, ...call.args])
        : await rawRedis.observe(call.readOnly ? 'FCALL_RO' : 'FCALL', [call.fn, keys.length, ...keys, ...call.args]);
      fromRedis = { reply: (reply as unknown[]).map(String) };
    } catch (error) {
      fromRedis = { error: errorText(error) };
    }
    let fromModel: { reply?: string[]; error?: string };
    try {
      fromModel = {
        reply: model.call(call.fn, keys, call.args, call.readOnly && !viaScript).map((n) => BigInt(n).toString()),
      };
    } catch (error) {
      fromModel = { error: (error as Error).message };
    }
    expect({ context, ...(fromRedis as object) }).toEqual({ context, ...fromModel });

    for (const { key, pttlText, spanMs } of rawRedis.takeObservations()) {
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

    if (fromModel.reply) {
      coverage.replies++;
      if (keys.some((key) => model.type(key) === 'hash')) coverage.bucketedReplies++;
      if ((call.decisions ?? 0) > 1) coverage.batchReplies++;
      if (fromModel.reply.includes('-9223372036854775808')) coverage.castOverflow++;
    }
    if (fromModel.error === 'ERR invalid arguments') coverage.invalidArguments++;
    if (fromModel.error?.startsWith('CLOCKSKEW')) coverage.clockSkew++;
    if (fromModel.error?.startsWith('WRONGTYPE')) coverage.wrongType++;
    if (fromModel.error?.startsWith('ERR value is not an integer')) coverage.commandErrors++;
  }
  await expectSameKeys(rawRedis, model, 'raw:*');
}

describe.each([
  ['FCALL / FCALL_RO', false],
  ['EVAL (script mode)', true],
] as const)('v3 raw calls through %s: the model gives the Lua’s replies, errors and keys', (_label, viaScript) => {
  it('for random ARGV, valid and garbage, on keys of both kinds', async () => {
    const coverage = noRawCoverage();
    await fc.assert(
      fc.asyncProperty(fc.array(rawCall, { minLength: 1, maxLength: 25 }), (calls) =>
        runRawCalls(calls, viaScript, coverage),
      ),
      checkParameters(viaScript ? 150 : 300),
    );
    expect(coverage.replies).toBeGreaterThan(0);
    expect(coverage.bucketedReplies).toBeGreaterThan(0);
    expect(coverage.batchReplies).toBeGreaterThan(0);
    expect(coverage.invalidArguments).toBeGreaterThan(0);
    expect(coverage.clockSkew).toBeGreaterThan(0);
    expect(coverage.wrongType).toBeGreaterThan(0);
    expect(coverage.castOverflow).toBeGreaterThan(0);
  }, 60_000);

  it('for costs and limits beyond 2^53 on bucketed keys', async () => {
    const coverage = noRawCoverage();
    await fc.assert(
      fc.asyncProperty(fc.array(hugeCall, { minLength: 1, maxLength: 30 }), (calls) =>
        runRawCalls(calls, viaScript, coverage),
      ),
      checkParameters(40),
    );
    expect(coverage.castOverflow).toBeGreaterThan(0);
  }, 60_000);
});
