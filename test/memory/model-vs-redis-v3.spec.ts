import fc from 'fast-check';
import type Redis from 'ioredis';
import { MemberIdSource } from '../../lib/limiter/member-ids';
import { formatLuaNumber } from '../../lib/memory/lua-values';
import { SlidingWindowModel } from '../../lib/memory/sliding-window-model';
import { readLibrarySource, toScript } from '../../lib/redis/lua-library';
import { ensureLibraries } from '../support/lua-functions';
import { useOwnRedisServer } from '../support/own-redis';
import { VirtualTimeRedis } from '../support/virtual-time-redis';
import {
  T0,
  checkParameters,
  checkTtls,
  compareCall,
  expectSameKeys,
  garbage,
  jsonField,
  mixed,
  nextTime,
  precisionOf,
  settle,
  timeMove,
  windowMsArb,
  zentries,
  type TimeMove,
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
/** Same server, plain: for reads (FCALL_RO), which need no TTL bookkeeping. */
let plain: Redis;

beforeAll(async () => {
  redis = own.connect((url) => new VirtualTimeRedis(url));
  plain = own.connect();
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
    const fromModel = await compareCall(
      rawRedis,
      model,
      call,
      keys,
      context,
      viaScript ? (scripts.get(call.fn) as string) : undefined,
    );

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
  }, 60_000);

  it('for costs and limits beyond 2^53 on bucketed keys', async () => {
    const coverage = noRawCoverage();
    await fc.assert(
      fc.asyncProperty(fc.array(hugeCall, { minLength: 1, maxLength: 30 }), (calls) =>
        runRawCalls(calls, viaScript, coverage),
      ),
      checkParameters(40),
    );
    // Limits above 1e15 are refused (a count of 1e17 would reach HINCRBY as "1e+17"), so no count
    // can overflow an integer reply any more: the calls that would have are invalid arguments.
    expect(coverage.castOverflow).toBe(0);
    expect(coverage.invalidArguments).toBeGreaterThan(0);
  }, 60_000);

  it('for limits of 1e20, refused before any count could reach 1e17 (which a change of precision would write as 1e+17)', async () => {
    const now = String(T0);
    const costly = (member: string) => ({
      fn: 'sliding_allow_v3' as const,
      keys: ['c'],
      args: [now, member, '0', '1e15', '1000', '1e20', '100'],
      readOnly: false,
    });
    const calls: RawCall[] = Array.from({ length: 101 }, (_, i) => costly(`m${i}`));
    // Re-bucketed at a precision of 1000: the count becomes "1.01e+17", which HINCRBY cannot add to.
    calls.push({ ...costly('x'), args: [now, 'x', '0', '1', '1000', '1e20', '1000'] });
    calls.push({ ...costly('y'), args: [now, 'y', '0', '1', '1000', '1e20', '1000'] });
    await runRawCalls(calls, viaScript, noRawCoverage());
  });
});

describe('Lua numbers given to redis.call', () => {
  it('reach Redis as the model writes them (%.17g)', async () => {
    const script = "redis.call('HSET', KEYS[1], 'f', tonumber(ARGV[1])) return redis.call('HGET', KEYS[1], 'f')";
    const numbers = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer({ min: -(2 ** 53), max: 2 ** 53 }),
      fc.constantFrom(1e15, 1e16, 1e17, 1.01e17, 123456789012345680, 2 ** 63, 1e21, 1e-4, 1e-5, 0.1, -0, 5e-324),
      // Exact ties at the 17th digit: C rounds them to even, JavaScript's toFixed up.
      fc.constantFrom(-656086798480639.625, 656086798480639.625, 1000000000000000.125, 2.5e-7 + 2 ** -70),
    );
    await fc.assert(
      fc.asyncProperty(numbers, async (n) => {
        const text = Object.is(n, -0) ? '-0' : String(n);
        expect({ n: text, written: await plain.eval(script, 1, 'numbers', text) }).toEqual({
          n: text,
          written: formatLuaNumber(n),
        });
      }),
      checkParameters(2000),
    );
  });
});

// ------------------------------------------------------------------------------------------------
// 2. Sequences on keys with fixed limits, on the test's clock
// ------------------------------------------------------------------------------------------------

/** A key's limit: the log (precisionMs 0) or the bucketed window. A key keeps its limit. */
interface KeyRule {
  windowMs: number;
  limit: number;
  precisionMs: number;
}

const KEY_POOL = 4;
const keyIndex = fc.nat(KEY_POOL - 1);
const keyRule: fc.Arbitrary<KeyRule> = fc.oneof(
  fc.record({ windowMs: windowMsArb, limit: fc.integer({ min: 1, max: 8 }), precisionMs: fc.constant(0) }),
  windowMsArb.chain((windowMs) =>
    fc.record({
      windowMs: fc.constant(windowMs),
      // Up to 20: enough admissions in one key's life to push its oldest ids out.
      limit: fc.integer({ min: 1, max: 20 }),
      precisionMs: precisionOf(windowMs),
    }),
  ),
);

/** One request: its keys, its cost (1 mostly, else up to the smallest limit), or a retry of an earlier one. */
interface Request {
  keys: number[];
  costRoll: number;
  /** Resend an earlier request (its member, keys, cost and original now_ms), picked by this number. */
  retry: number | null;
}

type Action =
  | { op: 'allow'; request: Request }
  | { op: 'batch'; requests: Request[] }
  | { op: 'peek'; keys: number[]; costRoll: number }
  /** sliding_allow_v2 on the same keys (its log is v3's; a bucketed key is WRONGTYPE to it). */
  | { op: 'v2'; request: Request }
  | { op: 'v2peek'; key: number }
  | { op: 'del'; key: number }
  /** A deploy changes a limit (its precision, or log ↔ bucketed) while its keys live on. */
  | { op: 'reconfigure'; key: number; rule: KeyRule };

const request = (maxKeys: number): fc.Arbitrary<Request> =>
  fc.record({
    keys: fc.uniqueArray(keyIndex, { minLength: 1, maxLength: maxKeys }),
    costRoll: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(30) }),
    retry: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat() }),
  });

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 8, arbitrary: request(3).map((r) => ({ op: 'allow' as const, request: r })) },
  {
    weight: 2,
    arbitrary: fc
      .array(request(2), { minLength: 1, maxLength: 4 })
      .map((requests) => ({ op: 'batch' as const, requests })),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({ keys: fc.uniqueArray(keyIndex, { minLength: 1, maxLength: 3 }), costRoll: fc.nat(30) })
      .map((peek) => ({ op: 'peek' as const, ...peek })),
  },
  { weight: 1, arbitrary: request(2).map((r) => ({ op: 'v2' as const, request: { ...r, costRoll: 0 } })) },
  { weight: 1, arbitrary: keyIndex.map((key) => ({ op: 'v2peek' as const, key })) },
  { weight: 1, arbitrary: keyIndex.map((key) => ({ op: 'del' as const, key })) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('reconfigure' as const), key: keyIndex, rule: keyRule }),
  },
);

interface Scenario {
  maxClockSkewMs: number;
  rules: KeyRule[];
  steps: { time: TimeMove; action: Action }[];
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  maxClockSkewMs: fc.oneof(fc.constantFrom(0, 1, 1000), fc.nat(2000)),
  rules: fc.array(keyRule, { minLength: KEY_POOL, maxLength: KEY_POOL }),
  steps: fc.array(fc.record({ time: timeMove, action }), { minLength: 1, maxLength: 40, size: 'medium' }),
});

/** What happened in a run of scenarios, to show that each kind of case was reached. */
interface Coverage {
  allowed: number;
  rejected: number;
  /** Requests of cost > 1 admitted. */
  costly: number;
  /** Rejections by a bucketed limit. */
  bucketRejected: number;
  /** Decisions of keys of both kinds. */
  mixedKinds: number;
  /** Retries of an admitted request answered as allowed. */
  retriesAllowed: number;
  batches: number;
  clockSkew: number;
  wrongType: number;
  /** v3 decisions reading a key written for another kind of limit, or another precision. */
  reconfigured: number;
  /** Steps at the moment an entry or a sub-window leaves its window. */
  onBoundary: number;
  backwards: number;
}

/** A request as sent, for retries. */
interface Sent {
  fn: 'v2' | 'v3';
  keys: number[];
  cost: number;
  member: string;
  nowMs: number;
}

async function runScenario(
  { maxClockSkewMs, rules: initialRules, steps }: Scenario,
  coverage: Coverage,
): Promise<void> {
  await redis.flushdb();
  const rules = [...initialRules];
  redis.expiresAt.clear();
  redis.takeObservations();
  let now = T0;
  let latest = T0;
  /** Redis' clock on the test's time line: the latest time any command has seen; the model's store keeps the same. */
  let redisNow = T0;
  const times: number[] = [];
  const model = new SlidingWindowModel({ clock: () => now });
  const name = (key: number) => `s:k${key}`;
  const sent: Sent[] = [];
  /** The requests of this step that are retries. */
  const retried = new Set<Sent>();
  let members = 0;

  /** A new request, or the retry of an earlier one as it was sent. */
  const prepare = (fn: 'v2' | 'v3', { keys, costRoll, retry }: Request): Sent => {
    if (retry !== null && sent.length > 0) {
      retried.add(sent[retry % sent.length]);
      return sent[retry % sent.length];
    }
    const smallestLimit = Math.min(...keys.map((key) => rules[key].limit));
    const cost = fn === 'v2' ? 1 : 1 + (costRoll % smallestLimit);
    const request = { fn, keys, cost, member: `m${members++}`, nowMs: now };
    sent.push(request);
    return request;
  };
  const triples = (keys: number[]) =>
    keys.flatMap((key) => [rules[key].windowMs, rules[key].limit, rules[key].precisionMs]);
  /** FCALL (or FCALL_RO) arguments of an action: function, keys, ARGV; undefined for a DEL. */
  const callOf = (act: Action): { fn: string; keys: number[]; args: (string | number)[]; sent: Sent[] } => {
    switch (act.op) {
      case 'allow': {
        const r = prepare('v3', act.request);
        if (r.fn === 'v2') {
          const pairs = r.keys.flatMap((key) => [rules[key].windowMs, rules[key].limit]);
          return {
            fn: 'sliding_allow_v2',
            keys: r.keys,
            args: [r.nowMs, r.member, maxClockSkewMs, ...pairs],
            sent: [r],
          };
        }
        const args = [r.nowMs, r.member, maxClockSkewMs, r.cost, ...triples(r.keys)];
        return { fn: 'sliding_allow_v3', keys: r.keys, args, sent: [r] };
      }
      case 'batch': {
        const requests = act.requests.map((r) => prepare('v3', r)).filter((r) => r.fn === 'v3');
        if (requests.length === 0) return callOf({ op: 'allow', request: { ...act.requests[0], retry: null } });
        const decisions = requests.flatMap((r) => [r.nowMs, r.member, r.cost, r.keys.length, ...triples(r.keys)]);
        const keys = requests.flatMap((r) => r.keys);
        return { fn: 'sliding_allow_many_v3', keys, args: [maxClockSkewMs, JSON.stringify(decisions)], sent: requests };
      }
      case 'peek': {
        const smallestLimit = Math.min(...act.keys.map((key) => rules[key].limit));
        const args = [now, 1 + (act.costRoll % smallestLimit), ...triples(act.keys)];
        return { fn: 'sliding_peek_v3', keys: act.keys, args, sent: [] };
      }
      case 'v2': {
        const r = prepare('v2', act.request);
        const pairs = r.keys.flatMap((key) => [rules[key].windowMs, rules[key].limit]);
        if (r.fn === 'v3') {
          return callOf({ op: 'allow', request: { keys: r.keys, costRoll: 0, retry: sent.indexOf(r) } });
        }
        return { fn: 'sliding_allow_v2', keys: r.keys, args: [r.nowMs, r.member, maxClockSkewMs, ...pairs], sent: [r] };
      }
      case 'v2peek':
        return {
          fn: 'sliding_peek_v2',
          keys: [act.key],
          args: [now, rules[act.key].windowMs, rules[act.key].limit],
          sent: [],
        };
      case 'del':
      case 'reconfigure':
        throw new Error(`${act.op} is no function call`);
    }
  };

  for (const [index, { time, action: act }] of steps.entries()) {
    const first =
      act.op === 'batch'
        ? act.requests[0].keys[0]
        : 'key' in act
          ? act.key
          : ('keys' in act ? act.keys : act.request.keys)[0];
    const leaving = leaveTimes(model, name(first), rules[first]);
    now = nextTime(time, now, latest, times, rules[first].windowMs, leaving, maxClockSkewMs);
    if (now < latest) coverage.backwards++;
    latest = Math.max(latest, now);
    redisNow = Math.max(redisNow, now);
    times.push(now);
    await redis.expireUpTo(redisNow);
    if (rules.some((rule, key) => leaveTimes(model, name(key), rule).includes(now))) coverage.onBoundary++;
    const context = `step ${index} at T0${now - T0 >= 0 ? '+' : ''}${now - T0}: ${JSON.stringify(act)}`;

    if (act.op === 'reconfigure') {
      rules[act.key] = act.rule;
      continue;
    }
    if (act.op === 'del') {
      expect({ context, deleted: await redis.del(name(act.key)) }).toEqual({
        context,
        deleted: model.del(name(act.key)),
      });
      redis.expiresAt.delete(name(act.key));
      continue;
    }
    retried.clear();
    const call = callOf(act);
    const keys = call.keys.map(name);
    const args = call.args.map(String);
    const readOnly = call.fn.startsWith('sliding_peek');
    if (call.fn.endsWith('_v3') && call.keys.some((key) => writtenForAnother(model, name(key), rules[key]))) {
      coverage.reconfigured++;
    }
    const fromRedis = await settle(() =>
      redis.observe(readOnly ? 'FCALL_RO' : 'FCALL', [call.fn, keys.length, ...keys, ...args]),
    );
    const fromModel = await settle(() => Promise.resolve(model.call(call.fn, keys, args, readOnly)));
    expect({ context, call, ...fromRedis }).toEqual({ context, call, ...fromModel });
    checkTtls(redis, redis.takeObservations(), model, redisNow, context);
    for (const key of new Set(keys)) {
      expect({ context, key, exists: (await redis.exists(key)) === 1 }).toEqual({
        context,
        key,
        exists: model.pttl(key) !== -2,
      });
    }
    countCoverage(coverage, call, fromModel, rules, retried);
  }

  await expectSameKeys(redis, model, 's:*');
  for (const key of model.keys()) {
    // Every key has a TTL, the model's.
    expect({ key, expiresAt: redis.expiresAt.get(key) }).toEqual({ key, expiresAt: redisNow + model.pttl(key) });
  }
}

function countCoverage(
  coverage: Coverage,
  call: { fn: string; keys: number[]; sent: Sent[] },
  outcome: { reply?: unknown; error?: string },
  rules: KeyRule[],
  retried: Set<Sent>,
): void {
  if (outcome.error?.startsWith('CLOCKSKEW')) coverage.clockSkew++;
  if (outcome.error?.startsWith('WRONGTYPE')) coverage.wrongType++;
  if (!Array.isArray(outcome.reply) || call.fn.startsWith('sliding_peek')) return;
  const reply = outcome.reply as number[];
  if (call.fn === 'sliding_allow_many_v3') coverage.batches++;
  let at = 0;
  for (const request of call.sent) {
    const allowed = reply[at] === 1;
    if (allowed) coverage.allowed++;
    else coverage.rejected++;
    if (allowed && request.cost > 1) coverage.costly++;
    const kinds = new Set(request.keys.map((key) => rules[key].precisionMs > 0));
    if (kinds.size > 1) coverage.mixedKinds++;
    if (allowed && retried.has(request)) coverage.retriesAllowed++;
    request.keys.forEach((key, i) => {
      const count = reply[at + 1 + 4 * i];
      if (!allowed && rules[key].precisionMs > 0 && count + request.cost > rules[key].limit) coverage.bucketRejected++;
    });
    at += 1 + 4 * request.keys.length;
  }
}

/** Whether a key holds another kind of window than its rule's, or another precision. */
function writtenForAnother(model: SlidingWindowModel, key: string, rule: KeyRule): boolean {
  const type = model.type(key);
  if (type === 'none') return false;
  if (type === 'zset') return rule.precisionMs > 0;
  return model.hash(key).find(([field]) => field === 'p')?.[1] !== String(rule.precisionMs);
}

/** When the entries (log) or sub-windows (bucketed) of a key in the model leave its window. */
function leaveTimes(model: SlidingWindowModel, key: string, rule: KeyRule): number[] {
  const type = model.type(key);
  if (type === 'zset') return model.entries(key).map((entry) => entry.score + rule.windowMs);
  if (type === 'hash') {
    return model
      .hash(key)
      .filter(([field]) => /^\d+$/.test(field)) // sub-windows; not "ids" nor "p"
      .map(([field]) => (Number(field) + 1) * rule.precisionMs + rule.windowMs - 1);
  }
  return [];
}

/** The next step's time; `windowMs` and `leaving` are those of the step's first key. */

describe('v3 sequences on keys of both kinds, on the test’s clock', () => {
  it('get the same replies, keys, fields and TTLs from the model as from Redis at every step', async () => {
    const coverage: Coverage = {
      allowed: 0,
      rejected: 0,
      costly: 0,
      bucketRejected: 0,
      mixedKinds: 0,
      retriesAllowed: 0,
      batches: 0,
      clockSkew: 0,
      wrongType: 0,
      reconfigured: 0,
      onBoundary: 0,
      backwards: 0,
    };
    await fc.assert(
      fc.asyncProperty(scenario, (s) => runScenario(s, coverage)),
      checkParameters(100),
    );
    for (const [kind, count] of Object.entries(coverage))
      expect({ kind, reached: count > 0 }).toEqual({ kind, reached: true });
  }, 60_000);
});

// ------------------------------------------------------------------------------------------------
// 3. The bucketed window's promises, on Redis
// ------------------------------------------------------------------------------------------------

/** One request of a promise run: the time since the previous one, its cost, and whether to retry a rejection. */
interface PromiseStep {
  /** Which limit's scale the gap is on, and how: 0, 1 ms, a sub-window or a window (± 1), anything. */
  gap: { limit: number; kind: 'zero' | 'one' | 'precision' | 'window' | 'any'; offsetMs: number; anyMs: number };
  costRoll: number;
  /** After a rejection: send it again 1 ms before its Retry-After (rejected), then at it (admitted). */
  retryAfterRejection: boolean;
  /** Before the request, a deploy changes a limit's precision (0: the log), keeping its window and limit. */
  reconfigure: { limit: number; precisionRoll: number } | null;
}

interface PromiseRun {
  /** One or two limits (stacked), of either kind, decided together. */
  rules: KeyRule[];
  /** Where in a sub-window the run starts. */
  phaseMs: number;
  steps: PromiseStep[];
}

const promiseRun: fc.Arbitrary<PromiseRun> = fc.record({
  rules: fc.array(keyRule, { minLength: 1, maxLength: 2 }),
  phaseMs: fc.nat(100_000),
  steps: fc.array(
    fc.record({
      gap: fc.record({
        limit: fc.nat(1),
        kind: fc.constantFrom('zero', 'one', 'precision', 'window', 'any', 'any'),
        offsetMs: fc.constantFrom(-1, 0, 1),
        anyMs: fc.nat(),
      }),
      costRoll: fc.oneof(fc.constant(0), fc.nat(40)),
      retryAfterRejection: fc.boolean(),
      reconfigure: fc.oneof(
        { weight: 15, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.record({ limit: fc.nat(1), precisionRoll: fc.nat() }) },
      ),
    }),
    { minLength: 1, maxLength: 40, size: 'medium' },
  ),
});

function gapMs({ limit, kind, offsetMs, anyMs }: PromiseStep['gap'], rules: KeyRule[]): number {
  const { windowMs, precisionMs } = rules[limit % rules.length];
  switch (kind) {
    case 'zero':
      return 0;
    case 'one':
      return 1;
    case 'precision':
      return Math.max(0, (precisionMs || windowMs) + offsetMs);
    case 'window':
      return Math.max(0, windowMs + offsetMs);
    case 'any':
      return anyMs % (2 * windowMs);
  }
}

interface PromiseCoverage {
  admitted: number;
  costly: number;
  /** Admissions that filled a window exactly to its limit. */
  full: number;
  bucketRejected: number;
  /** Bucketed rejections an exact log of the same window would have admitted: the price of precision. */
  underAdmitted: number;
  retryAfterChecked: number;
  stacked: number;
  /** Limits whose precision changed during a run. */
  reconfigured: number;
}

/** The v3 reply of one decision: allowed, and per limit count, remaining, retry_after_ms, reset_ms. */
function decision(reply: unknown, n: number): { allowed: boolean; limits: { count: number; retryAfterMs: number }[] } {
  const values = reply as number[];
  const limits = [];
  for (let i = 0; i < n; i++) limits.push({ count: values[1 + 4 * i], retryAfterMs: values[3 + 4 * i] });
  return { allowed: values[0] === 1, limits };
}

async function runPromises(
  { rules: initialRules, phaseMs, steps }: PromiseRun,
  coverage: PromiseCoverage,
): Promise<void> {
  await redis.flushdb();
  const rules = [...initialRules];
  /**
   * Limits whose precision changed: their keys may hold the old kind or precision for a while, so
   * only the promises that hold across a change are checked (never over-admits, Retry-After).
   */
  const changed = rules.map(() => false);
  const keys = rules.map((_, i) => `p:{r}:${i}`);
  let triples = rules.flatMap((rule) => [rule.windowMs, rule.limit, rule.precisionMs]);
  const smallestLimit = Math.min(...rules.map((rule) => rule.limit));
  /** What was admitted, in order of time. */
  const admitted: { atMs: number; cost: number }[] = [];
  const admittedIn = (afterMs: number, untilMs: number) =>
    admitted.reduce((sum, { atMs, cost }) => (atMs > afterMs && atMs <= untilMs ? sum + cost : sum), 0);
  let member = 0;
  // Time only moves forward here: keys never need to expire (VirtualTimeRedis keeps them), since
  // what has left a window is ignored or dropped by the next call.
  const allow = async (atMs: number, id: string, cost: number) =>
    decision(await redis.fcall('sliding_allow_v3', keys.length, ...keys, atMs, id, 0, cost, ...triples), keys.length);
  const peekOne = async (i: number, atMs: number, cost: number) =>
    decision(await plain.fcall_ro('sliding_peek_v3', 1, keys[i], atMs, cost, ...triples.slice(3 * i, 3 * i + 3)), 1);

  let now = T0 + phaseMs;
  for (const [index, step] of steps.entries()) {
    if (step.reconfigure) {
      const i = step.reconfigure.limit % rules.length;
      const { windowMs } = rules[i];
      const smallest = Math.ceil(windowMs / 1000);
      const roll = step.reconfigure.precisionRoll;
      const precisionMs = roll % 3 === 0 ? 0 : smallest + (roll % (windowMs - smallest + 1));
      if (precisionMs !== rules[i].precisionMs) {
        rules[i] = { ...rules[i], precisionMs };
        changed[i] = true;
        coverage.reconfigured++;
        triples = rules.flatMap((rule) => [rule.windowMs, rule.limit, rule.precisionMs]);
      }
    }
    now += gapMs(step.gap, rules);
    const cost = 1 + (step.costRoll % smallestLimit);
    const id = `m${member++}`;
    const context = `step ${index} at T0+${now - T0}, cost ${cost}`;
    const outcome = await allow(now, id, cost);

    let fits = true;
    rules.forEach(({ windowMs, limit, precisionMs }, i) => {
      const before = outcome.limits[i].count - (outcome.allowed ? cost : 0);
      const exact = admittedIn(now - windowMs, now);
      if (changed[i]) {
        // A log limit may count an old bucketed key by its precision, a bucketed one a re-bucketed key.
        expect({ context, limit: i, before, atLeastExact: before >= exact }).toEqual({
          context,
          limit: i,
          before,
          atLeastExact: true,
        });
      } else if (precisionMs === 0) {
        // The log counts exactly what was admitted in the window.
        expect({ context, limit: i, count: before }).toEqual({ context, limit: i, count: exact });
      } else {
        // The bucketed window counts at least that, and at most what one more sub-window holds.
        const widened = admittedIn(now - windowMs - precisionMs, now);
        expect({ context, limit: i, exact, before, widened, sandwiched: exact <= before && before <= widened }).toEqual(
          { context, limit: i, exact, before, widened, sandwiched: true },
        );
        if (before + cost > limit) {
          coverage.bucketRejected++;
          // Bounded under-admission: an exact log of windowMs + precisionMs rejects it too.
          expect({ context, limit: i, widenedLogRejects: widened + cost > limit }).toEqual({
            context,
            limit: i,
            widenedLogRejects: true,
          });
          if (exact + cost <= limit) coverage.underAdmitted++;
        }
      }
      if (before + cost > limit) fits = false;
    });
    expect({ context, allowed: outcome.allowed }).toEqual({ context, allowed: fits });

    if (outcome.allowed) {
      admitted.push({ atMs: now, cost });
      coverage.admitted++;
      if (cost > 1) coverage.costly++;
      if (rules.length > 1) coverage.stacked++;
      // Never over-admits: the window ending now holds at most the limit (the fullest windows end
      // at an admission, so checking at each one checks them all).
      for (const { windowMs, limit } of rules) {
        const inWindow = admittedIn(now - windowMs, now);
        expect({ context, windowMs, inWindow, overAdmitted: inWindow > limit }).toEqual({
          context,
          windowMs,
          inWindow,
          overAdmitted: false,
        });
        if (inWindow === limit) coverage.full++;
      }
      continue;
    }

    // Retry-After: exact (to the sub-window when bucketed), never early, per limit and for the request.
    const checks = rules.map(async ({ windowMs, limit, precisionMs }, i) => {
      const { count, retryAfterMs } = outcome.limits[i];
      if (count + cost <= limit) {
        expect({ context, limit: i, retryAfterMs }).toEqual({ context, limit: i, retryAfterMs: 0 });
        return 0;
      }
      const at = now + retryAfterMs;
      if (precisionMs > 0 && !changed[i]) {
        // When a sub-window leaves: at (index + 1) * precisionMs + windowMs - 1.
        expect({ context, limit: i, onSubWindow: (at - windowMs + 1) % precisionMs }).toEqual({
          context,
          limit: i,
          onSubWindow: 0,
        });
      }
      const [early, onTime] = await Promise.all([peekOne(i, at - 1, cost), peekOne(i, at, cost)]);
      expect({ context, limit: i, retryAfterMs, before: early.allowed, at: onTime.allowed }).toEqual({
        context,
        limit: i,
        retryAfterMs,
        before: false,
        at: true,
      });
      return retryAfterMs;
    });
    const retryAfterMs = Math.max(...(await Promise.all(checks)));
    coverage.retryAfterChecked++;
    if (step.retryAfterRejection) {
      // The same request again, 1 ms early and then on time: nothing else recorded in between.
      expect((await allow(now + retryAfterMs - 1, id, cost)).allowed).toBe(false);
      now += retryAfterMs;
      expect((await allow(now, id, cost)).allowed).toBe(true);
      admitted.push({ atMs: now, cost });
    }
  }
  redis.takeObservations();
}

describe('the bucketed window’s promises (and the log’s, with a cost), on Redis', () => {
  it(
    'never admits more than the limit in any window, rejects only what an exact log of windowMs + ' +
      'precisionMs rejects, and gives a Retry-After exact to the sub-window and never early',
    async () => {
      const coverage: PromiseCoverage = {
        admitted: 0,
        costly: 0,
        full: 0,
        bucketRejected: 0,
        underAdmitted: 0,
        retryAfterChecked: 0,
        stacked: 0,
        reconfigured: 0,
      };
      await fc.assert(
        fc.asyncProperty(promiseRun, (run) => runPromises(run, coverage)),
        checkParameters(100),
      );
      for (const [kind, count] of Object.entries(coverage)) {
        expect({ kind, reached: count > 0 }).toEqual({ kind, reached: true });
      }
    },
    60_000,
  );
});

// ------------------------------------------------------------------------------------------------
// 4. v2 and v3 on one log key
// ------------------------------------------------------------------------------------------------

/** Steps of one limit (a log) through v2 and v3; time moves back at most the tolerance. */
const historyRun = fc.record({
  windowMs: windowMsArb,
  limit: fc.integer({ min: 1, max: 8 }),
  /** Costs above 1 (v3 only), or every request of cost 1. */
  withCosts: fc.boolean(),
  steps: fc.array(
    fc.record({
      // Back moves stay within the tolerance: a rollback keeps deciding, it does not refuse.
      gapMs: fc.oneof(fc.constantFrom(0, 1), fc.integer({ min: -500, max: 3000 })),
      via: fc.constantFrom('v2' as const, 'v3' as const, 'peek v2' as const, 'peek v3' as const),
      costRoll: fc.nat(10),
      // Resend an earlier request (its member, cost and original now_ms), through this step's version.
      retry: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat() }),
    }),
    { minLength: 1, maxLength: 40, size: 'medium' },
  ),
});

const MAX_SKEW_MS = 1000;

describe('a log key shared by v2 and v3 (a canary, a rollback)', () => {
  it('counts the same entries, in cost units, as one log: the model of v3 alone (or v2 alone at cost 1)', async () => {
    let mixedSteps = 0;
    let retries = 0;
    let rejected = 0;
    await fc.assert(
      fc.asyncProperty(historyRun, async ({ windowMs, limit, withCosts, steps }) => {
        await redis.flushdb();
        // Its keys never expire (a fixed clock), nor do Redis' (VirtualTimeRedis persists them).
        const model = new SlidingWindowModel({ clock: () => MODEL_NOW });
        const sent: { member: string; cost: number; nowMs: number }[] = [];
        let now = T0;
        let latest = T0;
        let previous: string | undefined;
        for (const [index, { gapMs, via, costRoll, retry }] of steps.entries()) {
          now = Math.max(now + gapMs, latest - MAX_SKEW_MS);
          latest = Math.max(latest, now);
          const context = `step ${index} at T0+${now - T0} via ${via}`;
          let redisCall: [string, (string | number)[]];
          let modelCall: [string, (string | number)[]];
          if (via === 'peek v2' || via === 'peek v3') {
            redisCall =
              via === 'peek v2'
                ? ['sliding_peek_v2', [now, windowMs, limit]]
                : ['sliding_peek_v3', [now, 1, windowMs, limit, 0]];
            modelCall = withCosts
              ? ['sliding_peek_v3', [now, 1, windowMs, limit, 0]]
              : ['sliding_peek_v2', [now, windowMs, limit]];
          } else {
            const request =
              retry !== null && sent.length > 0
                ? sent[retry % sent.length]
                : { member: `m${sent.length}`, cost: withCosts ? 1 + (costRoll % limit) : 1, nowMs: now };
            if (retry !== null && sent.length > 0) retries++;
            else sent.push(request);
            // v2 knows no cost: through v2, a request (or the retry of a costly one) weighs 1.
            const cost = via === 'v2' ? 1 : request.cost;
            redisCall =
              via === 'v2'
                ? ['sliding_allow_v2', [request.nowMs, request.member, MAX_SKEW_MS, windowMs, limit]]
                : ['sliding_allow_v3', [request.nowMs, request.member, MAX_SKEW_MS, cost, windowMs, limit, 0]];
            modelCall = withCosts
              ? ['sliding_allow_v3', [request.nowMs, request.member, MAX_SKEW_MS, cost, windowMs, limit, 0]]
              : ['sliding_allow_v2', [request.nowMs, request.member, MAX_SKEW_MS, windowMs, limit]];
          }
          const readOnly = redisCall[0].startsWith('sliding_peek');
          const fromRedis = await settle(() =>
            redis.observe(readOnly ? 'FCALL_RO' : 'FCALL', [redisCall[0], 1, 'h', ...redisCall[1]]),
          );
          const fromModel = await settle(() =>
            Promise.resolve(model.call(modelCall[0], ['h'], modelCall[1].map(String), readOnly)),
          );
          expect({ context, ...fromRedis }).toEqual({ context, ...fromModel });
          if (!readOnly && previous !== undefined && previous !== via) mixedSteps++;
          if (!readOnly) previous = via;
          if (Array.isArray(fromModel.reply) && fromModel.reply[0] === 0) rejected++;
        }
        expect(await zentries(redis, 'h')).toEqual(model.entries('h').map(({ member, score }) => ({ member, score })));
        redis.takeObservations();
      }),
      checkParameters(100),
    );
    expect(mixedSteps).toBeGreaterThan(0);
    expect(retries).toBeGreaterThan(0);
    expect(rejected).toBeGreaterThan(0);
  }, 60_000);
});

// ------------------------------------------------------------------------------------------------
// 5. Memory
// ------------------------------------------------------------------------------------------------

describe('memory of a bucketed key', () => {
  it('is at most 2 KB for 10,000 per hour at a precision of one minute, after an hour of traffic', async () => {
    const hourMs = 3_600_000;
    const rule = [hourMs, 10_000, 60_000];
    const key = 'memory:{m}:hour';
    const requests = 10_000;
    // Request ids as the limiter makes them (8 random characters and a counter).
    const ids = new MemberIdSource();
    const pipeline = plain.pipeline();
    for (let i = 0; i < requests; i++) {
      const now = T0 + Math.floor((i * hourMs) / requests);
      pipeline.fcall('sliding_allow_v3', 1, key, now, ids.next(), 0, 1, ...rule);
    }
    const replies = (await pipeline.exec()) ?? [];
    expect(replies.filter(([error]) => error !== null)).toEqual([]);
    const admitted = replies.filter(([, reply]) => (reply as number[])[0] === 1).length;
    expect(admitted).toBeGreaterThan(9_000);
    expect(await plain.hlen(key)).toBe(65); // 60 sub-windows, the ids, the precision, the total, oldest and newest
    const bytes = Number(await plain.memory('USAGE', key));
    expect({ encoding: await plain.object('ENCODING', key), bytes, atMost2Kb: bytes <= 2048 }).toEqual({
      encoding: 'listpack',
      bytes,
      atMost2Kb: true,
    });
  });
});
