import fc from 'fast-check';
import type Redis from 'ioredis';
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
  errorText,
  expectSameKeys,
  garbage,
  jsonField,
  mixed,
  nextTime,
  precisionOf,
  settle,
  timeMove,
  windowMsArb,
  type TimeMove,
} from './redis-comparison';

/*
 * rate_limit_v2 (costs, the log or the bucketed window, stacked and batched limits, shadow limits,
 * per-key overrides, a key keeping its precision, retries): the model against the Lua on a real
 * redis-server, and v2's promises checked on Redis (and in the model). rate_limit_v1 serves the same
 * keys during a canary or a rollback, so its sliding_allow_v1 is called on them too: it decides a
 * log key (at cost 1, without retries or a clock-skew check) and gets WRONGTYPE from a bucketed one.
 *
 * 1. Random ARGV, garbage included, for the v2 functions (and v1's on the same keys), with override
 *    hashes valid and not, through FCALL / FCALL_RO and EVAL and the model: same replies, errors,
 *    keys and TTLs.
 * 2. Random sequences on keys with fixed limits (modes, precisions, costs, overrides set and
 *    deleted, stacked and batched calls, retries, v1 calls, time going back and forth): the same at
 *    every step.
 * 3. On Redis, checked against the model call by call: several precisions on one key keep the
 *    bucketed window's promises (no lock-out); a shadow limit alone would refuse exactly what it
 *    refuses enforced; a shadow limit stacked on an enforced one records what both admit; v1 and v2
 *    alternating on the same log key decide as v2 alone.
 * 4. Overrides with a TTL (limit, exempt, block; on enforced and shadow limits, alone and stacked):
 *    they apply up to the millisecond they expire and not after (Redis' rule: expired once now >
 *    expiry), and a Retry-After read from an override's remaining time is the same on both.
 *
 * A failure prints fast-check's seed and path; replay it with FC_SEED=<seed> FC_PATH=<path>.
 */

const own = useOwnRedisServer();
let redis: VirtualTimeRedis;
/** Same server, integers as strings: replies of any size compare exactly. */
let rawRedis: VirtualTimeRedis;
let plain: Redis;

beforeAll(async () => {
  redis = own.connect((url) => new VirtualTimeRedis(url));
  rawRedis = own.connect((url) => new VirtualTimeRedis(url, { stringNumbers: true }));
  plain = own.connect();
  await ensureLibraries(redis);
});

const V2_FUNCTIONS = ['sliding_allow_v2', 'sliding_allow_many_v2', 'sliding_peek_v2'] as const;
const scripts = new Map<string, string>(
  [
    ...V2_FUNCTIONS.map((fn) => ['rate_limit_v2.lua', fn] as const),
    ['rate_limit_v1.lua', 'sliding_allow_v1'] as const,
  ].map(([file, fn]) => [fn, toScript(readLibrarySource(file), fn).source]),
);

// ------------------------------------------------------------------------------------------------
// 1. Raw calls: random ARGV, garbage included
// ------------------------------------------------------------------------------------------------

const MODEL_NOW = 1_000_000;
const RAW_KEYS = ['a', 'b', 'c', 'd'];
const LOG_KEYS = new Set(['a', 'b']);
const rawName = (key: string) => `raw:{t}:${key}`;
const rawOverride = (key: string) => `${rawName(key)}|override`;

const OFFSETS = [0, 0, 1, 2, 5, 99, 100, 101, 249, 250, 251, 999, 1000, 1001, 4999, 5000, 5001, -1, -5, -1000];
const TIMES = fc.oneof(
  { weight: 20, arbitrary: fc.constantFrom(...OFFSETS).map((d) => String(T0 + d)) },
  { weight: 1, arbitrary: fc.constantFrom(...OFFSETS).map((d) => String(T0 + d + 0.5)) },
);
const BUCKETS = fc.constantFrom(
  ['1000', '100'],
  ['1000', '1000'],
  ['5000', '1000'],
  ['100', '7'],
  ['5', '1'],
  ['1000', '250'],
  ['1000', '1'],
  ['5000', '5'],
  ['1e3', '1e2'],
);
const ODD_BUCKETS = fc.constantFrom(['5000', '4'], ['1000', '1001'], ['2.5', '1'], ['1000', '0.5'], ['1000', '-1']);
const LOG_WINDOWS = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('1', '5', '100', '1000', '5000') },
  { weight: 1, arbitrary: fc.constantFrom('0.5', '1e3', '9007199254740993', '1e17') },
);
const MEMBERS = fc.constantFrom('m1', 'm2', 'm3', 'm4');
const ODD_MEMBERS = fc.constantFrom('', ' ', 'a b', 'ü', '\u0000', 'm1#2', '\t');
/** flags: enforced or shadow, with or without the override key. */
const FLAGS = fc.constantFrom(0, 1, 2, 2, 3, 3);

/** One limit's (window, limit, precision) for a raw key, mostly of the key's own kind. */
function tripleFor(key: string, clean: boolean, limit: fc.Arbitrary<string>) {
  const maybe = (valid: fc.Arbitrary<string>) => (clean ? valid : mixed(valid));
  const bucket = clean ? BUCKETS : fc.oneof({ weight: 6, arbitrary: BUCKETS }, { weight: 1, arbitrary: ODD_BUCKETS });
  const log = fc.tuple(maybe(LOG_WINDOWS), limit).map(([window, l]) => [window, l, '0']);
  const bucketed = fc.tuple(bucket, limit).map(([[window, precision], l]) => [window, l, precision]);
  const [ownKind, otherKind] = LOG_KEYS.has(key) ? [log, bucketed] : [bucketed, log];
  return fc.oneof({ weight: 12, arbitrary: ownKind }, { weight: 1, arbitrary: otherKind });
}

/** The limit keys, override keys and quadruples of a call on `keys`. */
function limitsFor(keys: string[], clean: boolean) {
  const limit = clean ? fc.constantFrom('2', '3', '5', '1e20') : mixed(fc.constantFrom('1', '2', '3', '5'));
  const flags = clean ? FLAGS.map(String) : mixed(FLAGS.map(String), 20);
  return fc.tuple(...keys.map((key) => fc.tuple(tripleFor(key, clean, limit), flags))).map((limits) => {
    const overrideKeys = keys.flatMap((key, i) => (Number(limits[i][1]) >= 2 ? [rawOverride(key)] : []));
    return {
      keys: [...keys.map(rawName), ...overrideKeys],
      quadruples: limits.flatMap(([triple, f]) => [...triple, f]),
    };
  });
}

type RawAction =
  | {
      kind: 'call';
      fn: string;
      keys: string[];
      args: string[];
      readOnly: boolean;
      decisions?: number;
      /** Delete the (override) key first, so that the call makes a fresh sorted set of it. */
      fresh?: boolean;
    }
  /** An override hash written on both sides (no TTL: Redis' keys are persisted after each call). */
  | { kind: 'override'; key: string; fields: string[] }
  | { kind: 'del'; key: string };

function rawCall(clean: boolean): fc.Arbitrary<RawAction> {
  const maybe = (valid: fc.Arbitrary<string>) => (clean ? valid : mixed(valid));
  const keysArb = fc.uniqueArray(fc.constantFrom(...RAW_KEYS), { minLength: 1, maxLength: 3 });
  const cost = clean ? fc.constantFrom('1', '1', '2') : mixed(fc.constantFrom('1', '2', '3'));
  const member = clean ? MEMBERS : fc.oneof({ weight: 10, arbitrary: MEMBERS }, { weight: 1, arbitrary: ODD_MEMBERS });
  const skew = maybe(fc.constantFrom('0', '10', '1000'));
  const allow = keysArb.chain((keys) =>
    fc
      .tuple(maybe(TIMES), member, skew, cost, limitsFor(keys, clean))
      .map(([now, m, s, c, { keys: all, quadruples }]) => ({
        kind: 'call' as const,
        fn: 'sliding_allow_v2',
        keys: all,
        args: [now, m, s, c, ...quadruples],
        readOnly: false,
      })),
  );
  const peek = keysArb.chain((keys) =>
    fc.tuple(maybe(TIMES), cost, limitsFor(keys, clean)).map(([now, c, { keys: all, quadruples }]) => ({
      kind: 'call' as const,
      fn: 'sliding_peek_v2',
      keys: all,
      args: [now, c, ...quadruples],
      readOnly: true,
    })),
  );
  const json = (arg: fc.Arbitrary<string>) => (clean ? jsonField(arg, 1_000_000) : jsonField(arg, 30));
  const decision = fc
    .uniqueArray(fc.constantFrom(...RAW_KEYS), { minLength: 1, maxLength: 2 })
    .chain((keys) =>
      fc
        .tuple(json(maybe(TIMES)), member, json(cost), limitsFor(keys, clean))
        .chain(([now, m, c, { keys: all, quadruples }]) =>
          fc
            .tuple(...quadruples.map((text) => json(fc.constant(text))))
            .map((fields) => ({ keys: all, fields: [now, JSON.stringify(m), c, String(keys.length), ...fields] })),
        ),
    );
  const batch = fc.tuple(skew, fc.array(decision, { minLength: 1, maxLength: 4 })).map(([s, decisions]) => ({
    kind: 'call' as const,
    fn: 'sliding_allow_many_v2',
    keys: decisions.flatMap((d) => d.keys),
    args: [s, `[${decisions.flatMap((d) => d.fields).join(',')}]`],
    readOnly: false,
    decisions: decisions.length,
  }));
  // v1 on any key: a log's entries (v2's, a costly request's <member>#i ones included) are its own;
  // a bucketed key is a hash, WRONGTYPE to v1 (and a key v1 creates is a log to v2). Its member may
  // be one v2 refuses ('m1#2' moves the entry of a costly request), its time a fraction.
  const v1 = fc
    .tuple(
      fc.constantFrom(...RAW_KEYS),
      maybe(TIMES),
      maybe(LOG_WINDOWS),
      maybe(fc.constantFrom('2', '3', '5')),
      member,
    )
    .map(([key, now, window, l, m]) => ({
      kind: 'call' as const,
      fn: 'sliding_allow_v1',
      keys: [rawName(key)],
      args: [now, window, l, m],
      readOnly: false,
    }));
  const override = fc
    .tuple(
      fc.constantFrom(...RAW_KEYS),
      fc.oneof(
        {
          weight: 6,
          arbitrary: fc.constantFrom(['action', 'exempt'], ['action', 'block'], ['action', 'limit', 'limit', '1']),
        },
        { weight: 3, arbitrary: fc.constantFrom(['action', 'limit', 'limit', '0'], ['action', 'limit', 'limit', '4']) },
        {
          weight: 4,
          arbitrary: fc.constantFrom(
            ['action', 'bogus'],
            ['action', 'limit'],
            ['action', 'limit', 'limit', 'x'],
            ['note', 'n'],
          ),
        },
      ),
    )
    .map(([key, fields]) => ({ kind: 'override' as const, key: rawOverride(key), fields: [...fields] }));
  const del = fc
    .constantFrom(...RAW_KEYS)
    .chain((key) => fc.constantFrom(rawName(key), rawOverride(key)).map((k) => ({ kind: 'del' as const, key: k })));
  // A log written where an override belongs: reading it as an override is WRONGTYPE, on both sides.
  // (On a fresh key: a call recording in an override hash would give it a TTL, which Redis'
  // VirtualTimeRedis then persists and the model does not, and a block's Retry-After reads it.)
  const misplaced = fc.tuple(fc.constantFrom(...RAW_KEYS), MEMBERS).map(([key, m]) => ({
    kind: 'call' as const,
    fn: 'sliding_allow_v2',
    keys: [rawOverride(key)],
    args: [String(T0), m, '1000', '1', '1000', '5', '0', '0'],
    readOnly: false,
    fresh: true,
  }));
  return fc.oneof(
    { weight: 1, arbitrary: misplaced },
    { weight: 8, arbitrary: allow },
    { weight: 2, arbitrary: peek },
    { weight: 3, arbitrary: batch },
    { weight: 2, arbitrary: v1 },
    { weight: 3, arbitrary: override },
    { weight: 1, arbitrary: del },
  );
}

const freeForm: fc.Arbitrary<RawAction> = fc
  .record({
    fn: fc.constantFrom(...V2_FUNCTIONS),
    keys: fc.array(fc.constantFrom(...RAW_KEYS.map(rawName)), { maxLength: 3 }),
    args: fc.array(fc.oneof(TIMES, LOG_WINDOWS, FLAGS.map(String), MEMBERS, garbage), { maxLength: 12 }),
  })
  .map((call) => ({ kind: 'call' as const, ...call, readOnly: call.fn === 'sliding_peek_v2' }));

const rawAction = fc.oneof(
  { weight: 12, arbitrary: rawCall(true) },
  { weight: 4, arbitrary: rawCall(false) },
  { weight: 1, arbitrary: freeForm },
);

interface RawCoverage {
  replies: number;
  /** sliding_allow_v1 replies: decisions of v1 on keys v2 writes too. */
  v1Replies: number;
  /** sliding_allow_v1 on a bucketed key (a hash). */
  v1WrongType: number;
  overridden: number;
  shadowRefusals: number;
  invalidArguments: number;
  invalidOverride: number;
  clockSkew: number;
  wrongType: number;
}

async function runRawActions(actions: RawAction[], viaScript: boolean, coverage: RawCoverage): Promise<void> {
  await rawRedis.flushdb();
  rawRedis.takeObservations();
  const model = new SlidingWindowModel({ clock: () => MODEL_NOW });
  for (const [index, action] of actions.entries()) {
    const context = `action ${index}: ${JSON.stringify(action)}`;
    if (action.kind === 'override') {
      const fromRedis = await settle(() => plain.hset(action.key, ...action.fields));
      const fromModel = await settle(async () => model.hset(action.key, action.fields));
      expect({ context, error: fromRedis.error }).toEqual({ context, error: fromModel.error });
      continue;
    }
    if (action.kind === 'del') {
      expect({ context, deleted: await plain.del(action.key) }).toEqual({ context, deleted: model.del(action.key) });
      continue;
    }
    if (action.fresh) expect(await plain.del(action.keys[0])).toBe(model.del(action.keys[0]));
    const script = viaScript ? scripts.get(action.fn) : undefined;
    const answer = await compareCall(rawRedis, model, action, action.keys, context, script);
    if (answer.reply) {
      coverage.replies++;
      if (action.fn === 'sliding_allow_v1') coverage.v1Replies++;
      if (action.fn.endsWith('_v2')) {
        const stride = 7;
        const values = answer.reply.map(Number);
        // Single calls only: a batch's decisions have limits of their own counts.
        if (action.fn !== 'sliding_allow_many_v2') {
          for (let at = 1; at < values.length; at += stride) {
            if (values[at + 6] > 0) coverage.overridden++;
            if (values[0] === 1 && values[at] === 0) coverage.shadowRefusals++;
          }
        }
      }
    }
    if (answer.error === 'ERR invalid arguments') coverage.invalidArguments++;
    if (answer.error?.startsWith('ERR invalid override')) coverage.invalidOverride++;
    if (answer.error?.startsWith('CLOCKSKEW')) coverage.clockSkew++;
    if (answer.error?.startsWith('WRONGTYPE')) coverage.wrongType++;
    if (answer.error?.startsWith('WRONGTYPE') && action.fn === 'sliding_allow_v1') coverage.v1WrongType++;
  }
  await expectSameKeys(rawRedis, model, 'raw:*');
}

describe.each([
  ['FCALL / FCALL_RO', false],
  ['EVAL (script mode)', true],
] as const)(
  'v2 raw calls (and v1’s) through %s: the model gives the Lua’s replies, errors and keys',
  (_label, viaScript) => {
    it('for random ARGV, valid and garbage, with override hashes valid and not', async () => {
      const coverage: RawCoverage = {
        replies: 0,
        v1Replies: 0,
        v1WrongType: 0,
        overridden: 0,
        shadowRefusals: 0,
        invalidArguments: 0,
        invalidOverride: 0,
        clockSkew: 0,
        wrongType: 0,
      };
      await fc.assert(
        fc.asyncProperty(fc.array(rawAction, { minLength: 1, maxLength: 25 }), (actions) =>
          runRawActions(actions, viaScript, coverage),
        ),
        checkParameters(viaScript ? 200 : 300),
      );
      for (const [kind, count] of Object.entries(coverage)) {
        expect({ kind, reached: count > 0 }).toEqual({ kind, reached: true });
      }
    }, 120_000);
  },
);

// ------------------------------------------------------------------------------------------------
// 2. Sequences on keys with fixed limits, on the test's clock
// ------------------------------------------------------------------------------------------------

/** A key's limit: the log (precisionMs 0) or the bucketed window, enforced or shadow. */
interface KeyRule {
  windowMs: number;
  limit: number;
  precisionMs: number;
  shadow: boolean;
}

const KEY_POOL = 4;
const keyIndex = fc.nat(KEY_POOL - 1);
const keyRule: fc.Arbitrary<KeyRule> = fc.oneof(
  fc.record({
    windowMs: windowMsArb,
    limit: fc.integer({ min: 1, max: 8 }),
    precisionMs: fc.constant(0),
    shadow: fc.boolean(),
  }),
  windowMsArb.chain((windowMs) =>
    fc.record({
      windowMs: fc.constant(windowMs),
      limit: fc.integer({ min: 1, max: 20 }),
      precisionMs: precisionOf(windowMs),
      shadow: fc.boolean(),
    }),
  ),
);

interface Request {
  keys: number[];
  costRoll: number;
  /** Resend an earlier request (its member, keys, cost and original now_ms), picked by this number. */
  retry: number | null;
  /** Whether the call reads the keys' overrides. */
  overrides: boolean;
}

type Action =
  | { op: 'allow'; request: Request }
  | { op: 'batch'; requests: Request[] }
  | { op: 'peek'; keys: number[]; costRoll: number; overrides: boolean }
  /**
   * sliding_allow_v1 on the request's key, with its window and limit (a canary, a rollback): cost 1,
   * the test's time as is, the mode ignored (v1 enforces); WRONGTYPE on a bucketed key.
   */
  | { op: 'v1'; request: Request }
  | { op: 'override'; key: number; fields: string[] }
  | { op: 'unoverride'; key: number }
  | { op: 'del'; key: number }
  /** A deploy changes a limit (its precision, its mode) while its keys live on. */
  | { op: 'reconfigure'; key: number; rule: KeyRule };

const request = (maxKeys: number): fc.Arbitrary<Request> =>
  fc.record({
    keys: fc.uniqueArray(keyIndex, { minLength: 1, maxLength: maxKeys }),
    costRoll: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(30) }),
    retry: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat() }),
    overrides: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  });

const overrideFields = fc
  .oneof(
    {
      weight: 3,
      arbitrary: fc.integer({ min: 0, max: 6 }).map((limit) => ['action', 'limit', 'limit', String(limit)]),
    },
    { weight: 2, arbitrary: fc.constant(['action', 'exempt', 'note', 'n', 'by', 'ops', 'createdAt', String(T0)]) },
    { weight: 2, arbitrary: fc.constant(['action', 'block']) },
    { weight: 1, arbitrary: fc.constant(['action', 'slower']) },
  )
  .map((fields): string[] => [...fields]);

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
      .record({
        keys: fc.uniqueArray(keyIndex, { minLength: 1, maxLength: 3 }),
        costRoll: fc.nat(30),
        overrides: fc.boolean(),
      })
      .map((peek) => ({ op: 'peek' as const, ...peek })),
  },
  { weight: 1, arbitrary: request(1).map((r) => ({ op: 'v1' as const, request: r })) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('override' as const), key: keyIndex, fields: overrideFields }) },
  { weight: 1, arbitrary: keyIndex.map((key) => ({ op: 'unoverride' as const, key })) },
  { weight: 1, arbitrary: keyIndex.map((key) => ({ op: 'del' as const, key })) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reconfigure' as const), key: keyIndex, rule: keyRule }) },
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

interface Coverage {
  allowed: number;
  rejected: number;
  costly: number;
  /** Shadow limits that would have refused an admitted request. */
  wouldRefuse: number;
  exempt: number;
  blocked: number;
  limitOverride: number;
  retriesAllowed: number;
  batches: number;
  clockSkew: number;
  invalidOverride: number;
  /** Decisions reading a key of another kind or precision than their limit's. */
  reconfigured: number;
  /** sliding_allow_v1 decisions, and its WRONGTYPE on a bucketed key. */
  v1Decisions: number;
  v1WrongType: number;
  onBoundary: number;
  backwards: number;
}

interface Sent {
  fn: 'v1' | 'v2';
  keys: number[];
  cost: number;
  member: string;
  nowMs: number;
  overrides: boolean;
}

const sequenceKey = (key: number) => `s:{k}:${key}`;
const sequenceOverride = (key: number) => `${sequenceKey(key)}|override`;

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
  let redisNow = T0;
  const times: number[] = [];
  const model = new SlidingWindowModel({ clock: () => now });
  const sent: Sent[] = [];
  const retried = new Set<Sent>();
  let members = 0;

  // A retry resends an earlier request as it was sent, through the function it went to: v1 has no
  // retries (its repeated member only moves its entry's score), v2 recognises its own.
  const prepare = (fn: 'v1' | 'v2', { keys, costRoll, retry, overrides }: Request): Sent => {
    if (retry !== null && sent.length > 0) {
      retried.add(sent[retry % sent.length]);
      return sent[retry % sent.length];
    }
    const smallestLimit = Math.min(...keys.map((key) => rules[key].limit));
    const cost = fn === 'v1' ? 1 : 1 + (costRoll % smallestLimit);
    const request = { fn, keys, cost, member: `m${members++}`, nowMs: now, overrides };
    sent.push(request);
    return request;
  };
  /** KEYS and quadruples of a v2 call. */
  const v2Limits = (keys: number[], overrides: boolean) => ({
    keys: [...keys.map(sequenceKey), ...(overrides ? keys.map(sequenceOverride) : [])],
    quadruples: keys.flatMap((key) => {
      const { windowMs, limit, precisionMs, shadow } = rules[key];
      return [windowMs, limit, precisionMs, (shadow ? 1 : 0) + (overrides ? 2 : 0)];
    }),
  });
  const callOf = (act: Action): { fn: string; keys: string[]; args: (string | number)[]; sent: Sent[] } => {
    switch (act.op) {
      case 'allow':
      case 'v1': {
        const r = prepare(act.op === 'v1' ? 'v1' : 'v2', act.request);
        if (r.fn === 'v1') {
          const [key] = r.keys;
          const { windowMs, limit } = rules[key];
          return {
            fn: 'sliding_allow_v1',
            keys: [sequenceKey(key)],
            args: [r.nowMs, windowMs, limit, r.member],
            sent: [r],
          };
        }
        const { keys, quadruples } = v2Limits(r.keys, r.overrides);
        return {
          fn: 'sliding_allow_v2',
          keys,
          args: [r.nowMs, r.member, maxClockSkewMs, r.cost, ...quadruples],
          sent: [r],
        };
      }
      case 'batch': {
        const requests = act.requests.map((r) => prepare('v2', r)).filter((r) => r.fn === 'v2');
        if (requests.length === 0) return callOf({ op: 'allow', request: { ...act.requests[0], retry: null } });
        const decisions: (string | number)[] = [];
        const keys: string[] = [];
        for (const r of requests) {
          const limits = v2Limits(r.keys, r.overrides);
          decisions.push(r.nowMs, r.member, r.cost, r.keys.length, ...limits.quadruples);
          keys.push(...limits.keys);
        }
        return {
          fn: 'sliding_allow_many_v2',
          keys,
          args: [maxClockSkewMs, JSON.stringify(decisions)],
          sent: requests,
        };
      }
      case 'peek': {
        const smallestLimit = Math.min(...act.keys.map((key) => rules[key].limit));
        const { keys, quadruples } = v2Limits(act.keys, act.overrides);
        return {
          fn: 'sliding_peek_v2',
          keys,
          args: [now, 1 + (act.costRoll % smallestLimit), ...quadruples],
          sent: [],
        };
      }
      default:
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
    const leaving = leaveTimes(model, sequenceKey(first), rules[first]);
    now = nextTime(time, now, latest, times, rules[first].windowMs, leaving, maxClockSkewMs);
    if (now < latest) coverage.backwards++;
    latest = Math.max(latest, now);
    redisNow = Math.max(redisNow, now);
    times.push(now);
    await redis.expireUpTo(redisNow);
    if (rules.some((rule, key) => leaveTimes(model, sequenceKey(key), rule).includes(now))) coverage.onBoundary++;
    const context = `step ${index} at T0${now - T0 >= 0 ? '+' : ''}${now - T0}: ${JSON.stringify(act)}`;

    switch (act.op) {
      case 'reconfigure':
        rules[act.key] = act.rule;
        continue;
      case 'del':
      case 'unoverride': {
        const key = act.op === 'del' ? sequenceKey(act.key) : sequenceOverride(act.key);
        expect({ context, deleted: await redis.del(key) }).toEqual({ context, deleted: model.del(key) });
        redis.expiresAt.delete(key);
        continue;
      }
      case 'override': {
        // Without a TTL: the calls PERSIST every key they touch (see VirtualTimeRedis).
        const key = sequenceOverride(act.key);
        await redis.del(key);
        model.del(key);
        await redis.hset(key, ...act.fields);
        model.hset(key, act.fields);
        continue;
      }
      default:
        break;
    }
    retried.clear();
    const call = callOf(act);
    const args = call.args.map(String);
    const readOnly = call.fn.startsWith('sliding_peek');
    const limitKeys = call.keys.filter((key) => !key.endsWith('|override'));
    if (limitKeys.some((key) => writtenForAnother(model, key, rules[keyNumber(key)]))) {
      coverage.reconfigured++;
    }
    const fromRedis = await settle(() =>
      redis.observe(readOnly ? 'FCALL_RO' : 'FCALL', [call.fn, call.keys.length, ...call.keys, ...args]),
    );
    const fromModel = await settle(() => Promise.resolve(model.call(call.fn, call.keys, args, readOnly)));
    expect({ context, call, ...fromRedis }).toEqual({ context, call, ...fromModel });
    checkTtls(redis, redis.takeObservations(), model, redisNow, context);
    for (const key of new Set(call.keys)) {
      expect({ context, key, exists: (await redis.exists(key)) === 1 }).toEqual({
        context,
        key,
        exists: model.pttl(key) !== -2,
      });
    }
    countCoverage(coverage, call, fromModel, retried);
  }

  await expectSameKeys(redis, model, 's:*');
  for (const key of model.keys()) {
    const pttl = model.pttl(key);
    // Every limit key has a TTL, the model's; override keys have none here.
    expect({ key, expiresAt: redis.expiresAt.get(key) }).toEqual({
      key,
      expiresAt: pttl === -1 ? undefined : redisNow + pttl,
    });
  }
}

const keyNumber = (key: string) => Number(key.slice(key.lastIndexOf(':') + 1));

function countCoverage(
  coverage: Coverage,
  call: { fn: string; sent: Sent[] },
  outcome: { reply?: unknown; error?: string },
  retried: Set<Sent>,
): void {
  if (outcome.error?.startsWith('CLOCKSKEW')) coverage.clockSkew++;
  if (outcome.error?.startsWith('ERR invalid override')) coverage.invalidOverride++;
  if (outcome.error?.startsWith('WRONGTYPE') && call.fn === 'sliding_allow_v1') coverage.v1WrongType++;
  if (!Array.isArray(outcome.reply) || call.fn.startsWith('sliding_peek')) return;
  const reply = outcome.reply as number[];
  if (call.fn === 'sliding_allow_many_v2') coverage.batches++;
  if (call.fn === 'sliding_allow_v1') coverage.v1Decisions++;
  let at = 0;
  for (const request of call.sent) {
    const allowed = reply[at] === 1;
    if (allowed) coverage.allowed++;
    else coverage.rejected++;
    if (allowed && request.cost > 1) coverage.costly++;
    if (allowed && retried.has(request) && request.fn === 'v2') coverage.retriesAllowed++;
    // v1 replies [allowed, remaining]; v2 allowed, then 7 per limit.
    const stride = request.fn === 'v1' ? 1 : 7;
    for (let i = 0; i < request.keys.length; i++) {
      const limit = reply.slice(at + 1 + stride * i, at + 1 + stride * (i + 1));
      if (request.fn === 'v2') {
        if (allowed && limit[0] === 0) coverage.wouldRefuse++;
        if (limit[6] === 1) coverage.limitOverride++;
        if (limit[6] === 2) coverage.exempt++;
        if (limit[6] === 3) coverage.blocked++;
      }
    }
    at += 1 + stride * request.keys.length;
  }
}

/** Whether a key holds another kind of window than its rule's, or another precision. */
function writtenForAnother(model: SlidingWindowModel, key: string, rule: KeyRule): boolean {
  const type = model.type(key);
  if (type === 'none') return false;
  if (type === 'zset') return rule.precisionMs > 0;
  return model.hash(key).find(([field]) => field === 'p')?.[1] !== String(rule.precisionMs);
}

/** When the entries (log) or sub-windows (bucketed, in the key's own precision) of a key leave its window. */
function leaveTimes(model: SlidingWindowModel, key: string, rule: KeyRule): number[] {
  const type = model.type(key);
  if (type === 'zset') return model.entries(key).map((entry) => entry.score + rule.windowMs);
  if (type === 'hash') {
    const fields = model.hash(key);
    const precision = Number(fields.find(([field]) => field === 'p')?.[1] ?? rule.precisionMs);
    return fields
      .filter(([field]) => /^\d+$/.test(field))
      .map(([field]) => (Number(field) + 1) * precision + rule.windowMs - 1);
  }
  return [];
}

describe('v2 sequences with modes, precisions and overrides, v1 calls mixed in, on the test’s clock', () => {
  it('get the same replies, keys, fields and TTLs from the model as from Redis at every step', async () => {
    const coverage: Coverage = {
      allowed: 0,
      rejected: 0,
      costly: 0,
      wouldRefuse: 0,
      exempt: 0,
      blocked: 0,
      limitOverride: 0,
      retriesAllowed: 0,
      batches: 0,
      clockSkew: 0,
      invalidOverride: 0,
      reconfigured: 0,
      v1Decisions: 0,
      v1WrongType: 0,
      onBoundary: 0,
      backwards: 0,
    };
    await fc.assert(
      fc.asyncProperty(scenario, (s) => runScenario(s, coverage)),
      checkParameters(100),
    );
    for (const [kind, count] of Object.entries(coverage)) {
      expect({ kind, reached: count > 0 }).toEqual({ kind, reached: true });
    }
  }, 120_000);
});

// ------------------------------------------------------------------------------------------------
// 3. v2's promises, on Redis and in the model
// ------------------------------------------------------------------------------------------------

/** A decision's reply, per limit: room, count, remaining, retry_after_ms, reset_ms, limit, override. */
function decisionOf(reply: number[]) {
  const limits = [];
  for (let at = 1; at < reply.length; at += 7) {
    const [room, count, remaining, retryAfterMs, resetMs] = reply.slice(at, at + 5);
    limits.push({ room: room === 1, count, remaining, retryAfterMs, resetMs });
  }
  return { allowed: reply[0] === 1, limits };
}

/**
 * Calls functions on Redis and on a model on the same clock, requiring the same answers, and
 * expires Redis' keys on that clock (VirtualTimeRedis) as the model expires its own.
 */
class Twin {
  readonly model: SlidingWindowModel;
  nowMs = T0;

  constructor() {
    this.model = new SlidingWindowModel({ clock: () => this.nowMs });
  }

  static async start(): Promise<Twin> {
    await redis.flushdb();
    redis.expiresAt.clear();
    redis.takeObservations();
    return new Twin();
  }

  /** FCALL (or FCALL_RO) at `nowMs` on both; the reply, the same on both. */
  async call(fn: string, keys: string[], args: (string | number)[], nowMs: number, context: string): Promise<number[]> {
    this.nowMs = Math.max(this.nowMs, nowMs);
    await redis.expireUpTo(this.nowMs);
    const readOnly = fn.startsWith('sliding_peek');
    const texts = args.map(String);
    const fromRedis = await settle(() =>
      redis.observe(readOnly ? 'FCALL_RO' : 'FCALL', [fn, keys.length, ...keys, ...texts]),
    );
    const fromModel = await settle(() => Promise.resolve(this.model.call(fn, keys, texts, readOnly)));
    expect({ context, ...fromRedis }).toEqual({ context, ...fromModel });
    checkTtls(redis, redis.takeObservations(), this.model, this.nowMs, context);
    if (fromModel.error) throw new Error(`${context}: ${fromModel.error}`);
    return fromModel.reply as number[];
  }
}

/** Precisions that divide a window into at most 1000 sub-windows, and the log (0). */
function precisionsOf(windowMs: number): fc.Arbitrary<number[]> {
  return fc.uniqueArray(fc.oneof(fc.constant(0), precisionOf(windowMs)), { minLength: 2, maxLength: 3 });
}

interface MixedRun {
  windowMs: number;
  limit: number;
  precisions: number[];
  steps: {
    gapRoll: number;
    gapKind: 'zero' | 'one' | 'sub' | 'window' | 'any';
    pick: number;
    costRoll: number;
    waitRetry: boolean;
  }[];
}

const mixedRun: fc.Arbitrary<MixedRun> = fc
  .record({
    windowMs: fc.oneof(fc.integer({ min: 2, max: 50 }), fc.integer({ min: 50, max: 20_000 })),
    limit: fc.integer({ min: 1, max: 12 }),
  })
  .chain(({ windowMs, limit }) =>
    fc.record({
      windowMs: fc.constant(windowMs),
      limit: fc.constant(limit),
      precisions: precisionsOf(windowMs),
      steps: fc.array(
        fc.record({
          gapRoll: fc.nat(),
          gapKind: fc.constantFrom('zero', 'one', 'sub', 'window', 'any', 'any'),
          pick: fc.nat(),
          costRoll: fc.oneof(fc.constant(0), fc.nat(20)),
          waitRetry: fc.boolean(),
        }),
        { minLength: 1, maxLength: 50, size: 'medium' },
      ),
    }),
  );

describe('several precisions on one key (a rolling deploy), on Redis and in the model', () => {
  it(
    'never admit more than the limit, never reject what a log of windowMs + the largest precision admits, ' +
      'and a client waiting retry_after_ms is admitted: no lock-out',
    async () => {
      let rejected = 0;
      let waited = 0;
      let mixedCallers = 0;
      await fc.assert(
        fc.asyncProperty(mixedRun, async ({ windowMs, limit, precisions, steps }) => {
          const twin = await Twin.start();
          const largest = Math.max(...precisions);
          const admitted: { atMs: number; cost: number }[] = [];
          const admittedIn = (afterMs: number, untilMs: number) =>
            admitted.reduce((sum, { atMs, cost }) => (atMs > afterMs && atMs <= untilMs ? sum + cost : sum), 0);
          const args = (precision: number) => [windowMs, limit, precision, 0];
          let now = T0;
          let previous: number | undefined;
          for (const [index, step] of steps.entries()) {
            const precision = precisions[step.pick % precisions.length];
            if (previous !== undefined && previous !== precision) mixedCallers++;
            previous = precision;
            const sub = precision || windowMs;
            now += { zero: 0, one: 1, sub, window: windowMs, any: step.gapRoll % (2 * windowMs) }[step.gapKind];
            const cost = 1 + (step.costRoll % limit);
            const context = `step ${index} at T0+${now - T0}, precision ${precision}, cost ${cost}`;
            const allow = (atMs: number) =>
              twin.call(
                'sliding_allow_v2',
                ['mix:{k}'],
                [atMs, `m${index}`, 0, cost, ...args(precision)],
                atMs,
                context,
              );
            const outcome = decisionOf(await allow(now));
            if (outcome.allowed) {
              admitted.push({ atMs: now, cost });
              const inWindow = admittedIn(now - windowMs, now);
              expect({ context, inWindow, overAdmitted: inWindow > limit }).toEqual({
                context,
                inWindow,
                overAdmitted: false,
              });
              continue;
            }
            rejected++;
            // Bounded: a log of windowMs + the largest precision in use rejects it too.
            const widened = admittedIn(now - windowMs - largest, now);
            expect({ context, widened, widenedLogRejects: widened + cost > limit }).toEqual({
              context,
              widened,
              widenedLogRejects: true,
            });
            // Retry-After: a millisecond early is still refused; on time, admitted (whatever precision asks).
            const { retryAfterMs } = outcome.limits[0];
            const other = precisions[(step.pick + 1) % precisions.length];
            const peekAt = async (atMs: number, p: number) =>
              decisionOf(
                await twin.call(
                  'sliding_peek_v2',
                  ['mix:{k}'],
                  [atMs, cost, ...args(p)],
                  twin.nowMs,
                  `${context}, peek`,
                ),
              ).allowed;
            expect({ context, retryAfterMs, early: await peekAt(now + retryAfterMs - 1, other) }).toEqual({
              context,
              retryAfterMs,
              early: false,
            });
            expect({ context, retryAfterMs, onTime: await peekAt(now + retryAfterMs, other) }).toEqual({
              context,
              retryAfterMs,
              onTime: true,
            });
            if (step.waitRetry) {
              now += retryAfterMs;
              const retried = decisionOf(
                await twin.call(
                  'sliding_allow_v2',
                  ['mix:{k}'],
                  [now, `m${index}`, 0, cost, ...args(other)],
                  now,
                  `${context}, after Retry-After`,
                ),
              );
              expect({ context, admittedAfterWaiting: retried.allowed }).toEqual({
                context,
                admittedAfterWaiting: true,
              });
              admitted.push({ atMs: now, cost });
              waited++;
            }
          }
        }),
        checkParameters(100),
      );
      expect(rejected).toBeGreaterThan(0);
      expect(waited).toBeGreaterThan(0);
      expect(mixedCallers).toBeGreaterThan(0);
    },
    120_000,
  );
});

interface TrafficStep {
  gapMs: number;
  costRoll: number;
  /** Resend an earlier request (member, cost, original now_ms). */
  retry: number | null;
}

const traffic = fc.record({
  rule: keyRule,
  steps: fc.array(
    fc.record({
      gapMs: fc.oneof(fc.constantFrom(0, 1), fc.nat(3000)),
      costRoll: fc.oneof(fc.constant(0), fc.nat(10)),
      retry: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat() }),
    }),
    { minLength: 1, maxLength: 50, size: 'medium' },
  ),
});

/** The requests of a traffic run: member, cost and now_ms, retries resent as they were (time and all). */
function requestsOf(rule: KeyRule, steps: TrafficStep[]) {
  const sent: { member: string; cost: number; nowMs: number }[] = [];
  const requests = [];
  let now = T0;
  for (const { gapMs, costRoll, retry } of steps) {
    now += gapMs;
    const request =
      retry !== null && sent.length > 0
        ? sent[retry % sent.length]
        : { member: `m${sent.length}`, cost: 1 + (costRoll % rule.limit), nowMs: now };
    if (request.nowMs === now) sent.push(request);
    requests.push({ ...request, at: now });
  }
  return requests;
}

/** A key's contents as compared across keys: entries (log) or fields (bucketed), TTL aside. */
async function contentsOf(key: string): Promise<unknown> {
  const type = await plain.type(key);
  if (type === 'zset') return plain.zrange(key, 0, '-1', 'WITHSCORES');
  if (type === 'hash') return plain.hgetall(key);
  return type;
}

describe('a shadow limit, on Redis and in the model', () => {
  it('alone, would refuse exactly what the same limit enforced refuses, its key holding the same', async () => {
    let refusals = 0;
    let retries = 0;
    await fc.assert(
      fc.asyncProperty(traffic, async ({ rule, steps }) => {
        const twin = await Twin.start();
        const limitOf = (shadow: boolean) => [rule.windowMs, rule.limit, rule.precisionMs, shadow ? 1 : 0];
        let enforcedRefusals = 0;
        let wouldRefuse = 0;
        for (const [index, { member, cost, nowMs, at }] of requestsOf(rule, steps).entries()) {
          if (nowMs !== at) retries++;
          const context = `request ${index} (${member}, cost ${cost}) at T0+${at - T0}`;
          const args = (shadow: boolean) => [nowMs, member, 1_000_000, cost, ...limitOf(shadow)];
          const enforced = decisionOf(await twin.call('sliding_allow_v2', ['e:{k}'], args(false), at, context));
          const shadow = decisionOf(await twin.call('sliding_allow_v2', ['s:{k}'], args(true), at, context));
          if (!enforced.allowed) enforcedRefusals++;
          if (!shadow.limits[0].room) wouldRefuse++;
          expect({ context, shadowAdmits: shadow.allowed }).toEqual({ context, shadowAdmits: true });
          // Room in the shadow limit is admission in the enforced one; the counts and times agree.
          const { room: _room, ...enforcedLimit } = enforced.limits[0];
          const { room, ...shadowLimit } = shadow.limits[0];
          expect({ context, wouldAdmit: room, ...shadowLimit }).toEqual({
            context,
            wouldAdmit: enforced.allowed,
            ...enforcedLimit,
            retryAfterMs: enforced.allowed ? 0 : enforcedLimit.retryAfterMs,
          });
          expect({ context, shadowKey: await contentsOf('s:{k}') }).toEqual({
            context,
            shadowKey: await contentsOf('e:{k}'),
          });
        }
        expect(wouldRefuse).toBe(enforcedRefusals);
        refusals += enforcedRefusals;
      }),
      checkParameters(100),
    );
    expect(refusals).toBeGreaterThan(0);
    expect(retries).toBeGreaterThan(0);
  }, 120_000);

  it('stacked on an enforced limit, counts and refuses as that limit enforced on the admitted requests alone', async () => {
    let wouldRefuse = 0;
    let refusedByEnforced = 0;
    await fc.assert(
      fc.asyncProperty(traffic, keyRule, async ({ rule, steps }, shadowRule) => {
        const twin = await Twin.start();
        const quadruple = (r: KeyRule, shadow: boolean) => [r.windowMs, r.limit, r.precisionMs, shadow ? 1 : 0];
        const smallest = Math.min(rule.limit, shadowRule.limit);
        // No retries here: a retry the enforced limit recognises is recorded nowhere, where the
        // reference, whose key may have let the request's entry go since, would count it again.
        const fresh = steps.map((step) => ({ ...step, retry: null }));
        for (const [index, { member, cost: rawCost, nowMs, at }] of requestsOf(rule, fresh).entries()) {
          const cost = 1 + ((rawCost - 1) % smallest);
          const context = `request ${index} (${member}, cost ${cost}) at T0+${at - T0}`;
          const stacked = decisionOf(
            await twin.call(
              'sliding_allow_v2',
              ['st:{k}:e', 'st:{k}:s'],
              [nowMs, member, 1_000_000, cost, ...quadruple(rule, false), ...quadruple(shadowRule, true)],
              at,
              context,
            ),
          );
          if (!stacked.allowed) {
            refusedByEnforced++;
            continue;
          }
          // The reference: the shadow limit enforced, on the requests the enforced limit admits.
          const reference = decisionOf(
            await twin.call(
              'sliding_allow_v2',
              ['ref:{k}'],
              [nowMs, member, 1_000_000, cost, ...quadruple(shadowRule, false)],
              at,
              context,
            ),
          );
          if (!stacked.limits[1].room) wouldRefuse++;
          expect({ context, wouldAdmit: stacked.limits[1].room, count: stacked.limits[1].count }).toEqual({
            context,
            wouldAdmit: reference.allowed,
            count: reference.limits[0].count,
          });
          expect({ context, shadowKey: await contentsOf('st:{k}:s') }).toEqual({
            context,
            shadowKey: await contentsOf('ref:{k}'),
          });
        }
      }),
      checkParameters(100),
    );
    expect(wouldRefuse).toBeGreaterThan(0);
    expect(refusedByEnforced).toBeGreaterThan(0);
  }, 120_000);
});

/** A run of requests on one log limit, each decided by v1 or by v2 on the mixed key. */
const alternatingRun = fc.record({
  rule: fc.record({
    windowMs: windowMsArb,
    limit: fc.integer({ min: 1, max: 8 }),
    precisionMs: fc.constant(0),
    shadow: fc.constant(false),
  }),
  steps: fc.array(
    fc.record({
      gapMs: fc.oneof(fc.constantFrom(0, 1), fc.nat(3000)),
      /** Else, now and then, to the moment (± 1 ms) the oldest live entry leaves the window. */
      toLeave: fc.oneof(
        { weight: 3, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.constantFrom(-1, 0, 1) },
      ),
      viaV1: fc.boolean(),
    }),
    { minLength: 1, maxLength: 50, size: 'medium' },
  ),
});

describe('v1 and v2 alternating on the same log key (a canary, a rollback), on Redis and in the model', () => {
  // What v1 can decide: the log, enforced, at cost 1. No retries (v1 would only move a repeated
  // member's entry, where v2 answers it as admitted and records nothing), and time never goes back
  // (v2 refuses a time too far behind a key's newest entry; v1 takes the caller's time as is).
  it('decide as v2 alone, and leave the same live entries', async () => {
    let v1Steps = 0;
    let v1Rejected = 0;
    let v2AfterV1 = 0;
    let onBoundary = 0;
    await fc.assert(
      fc.asyncProperty(alternatingRun, async ({ rule, steps }) => {
        const twin = await Twin.start();
        const { windowMs, limit } = rule;
        let now = T0;
        let v1Wrote = false;
        for (const [index, { gapMs, toLeave, viaV1 }] of steps.entries()) {
          const oldest = twin.model.entries('alone:{k}').find(({ score }) => score > now - windowMs);
          if (toLeave === null || oldest === undefined) now += gapMs;
          else {
            now = Math.max(now, oldest.score + windowMs + toLeave);
            if (now === oldest.score + windowMs) onBoundary++;
          }
          const member = `m${index}`;
          const context = `request ${index} (${member}, ${viaV1 ? 'v1' : 'v2'}) at T0+${now - T0}`;
          const v2 = async (key: string) =>
            decisionOf(
              await twin.call('sliding_allow_v2', [key], [now, member, 0, 1, windowMs, limit, 0, 0], now, context),
            );
          const alone = await v2('alone:{k}');
          const { room: _room, ...aloneLimit } = alone.limits[0];
          if (viaV1) {
            v1Steps++;
            const [allowed, remaining] = await twin.call(
              'sliding_allow_v1',
              ['mixed:{k}'],
              [now, windowMs, limit, member],
              now,
              context,
            );
            if (allowed !== 1) v1Rejected++;
            v1Wrote ||= allowed === 1;
            // v1's reply carries only these two.
            expect({ context, allowed: allowed === 1, remaining }).toEqual({
              context,
              allowed: alone.allowed,
              remaining: aloneLimit.remaining,
            });
          } else {
            if (v1Wrote) v2AfterV1++;
            const mixed = await v2('mixed:{k}');
            const { room: _mixedRoom, ...mixedLimit } = mixed.limits[0];
            expect({ context, allowed: mixed.allowed, ...mixedLimit }).toEqual({
              context,
              allowed: alone.allowed,
              ...aloneLimit,
            });
          }
          expect({ context, entries: await liveEntries('mixed:{k}', now, windowMs) }).toEqual({
            context,
            entries: await liveEntries('alone:{k}', now, windowMs),
          });
        }
        await expectSameKeys(redis, twin.model, '*{k}*');
      }),
      checkParameters(100),
    );
    expect(v1Steps).toBeGreaterThan(0);
    expect(v1Rejected).toBeGreaterThan(0);
    expect(v2AfterV1).toBeGreaterThan(0);
    expect(onBoundary).toBeGreaterThan(0);
  }, 120_000);
});

/** A log key's entries still in the window at `nowMs`, in Redis (none when the key is gone). */
async function liveEntries(key: string, nowMs: number, windowMs: number): Promise<unknown> {
  const type = await plain.type(key);
  if (type === 'none') return [];
  if (type !== 'zset') return type;
  return plain.zrangebyscore(key, `(${nowMs - windowMs}`, '+inf', 'WITHSCORES');
}

// ------------------------------------------------------------------------------------------------
// 4. Overrides that expire, on Redis and in the model
// ------------------------------------------------------------------------------------------------

/** One step of a run with expiring overrides on two keys. */
interface ExpiringStep {
  /** How far time moves first: not, a little, anywhere in two windows, or next to an override's expiry. */
  gapKind: 'zero' | 'small' | 'any' | 'expiry';
  gapRoll: number;
  /** With `expiry`: lands this many ms from the expiry (Redis: expired once now > expiry). */
  offset: -1 | 0 | 1;
  op: 'allow' | 'peek' | 'set' | 'unset';
  key: 0 | 1;
  /** A decision on both keys (stacked), rather than on `key` alone. */
  stacked: boolean;
  costRoll: number;
  fields: string[];
  ttlMs: number;
}

const expiringStep: fc.Arbitrary<ExpiringStep> = fc.record({
  gapKind: fc.constantFrom('zero', 'small', 'any', 'expiry', 'expiry'),
  gapRoll: fc.nat(),
  offset: fc.constantFrom(-1, 0, 1),
  op: fc.oneof(
    { weight: 6, arbitrary: fc.constant('allow' as const) },
    { weight: 1, arbitrary: fc.constant('peek' as const) },
    { weight: 3, arbitrary: fc.constant('set' as const) },
    { weight: 1, arbitrary: fc.constant('unset' as const) },
  ),
  key: fc.constantFrom(0, 1),
  stacked: fc.boolean(),
  costRoll: fc.oneof(fc.constant(0), fc.nat(10)),
  fields: overrideFields.filter((fields) => fields[1] !== 'slower'),
  ttlMs: fc.oneof(fc.constantFrom(1, 2, 5, 100), fc.integer({ min: 1, max: 10_000 })),
});

const expiringRun = fc.record({
  rules: fc.array(keyRule, { minLength: 2, maxLength: 2 }),
  steps: fc.array(expiringStep, { minLength: 1, maxLength: 40, size: 'medium' }),
});

interface ExpiringCoverage {
  /** Decisions an override applied to (limit, exempt or block). */
  applied: number;
  /** Decisions on a key whose override had expired (it applied no more). */
  afterExpiry: number;
  /** Decisions at the very millisecond an override expires (it still applies). */
  atExpiry: number;
  /** Retry-After read from an override's remaining time (a block, or a cost over an override's limit). */
  fromOverrideTtl: number;
  blocked: number;
}

/** Real ms an override outlives its expiry on the test's clock in Redis (the test deletes it then). */
const OVERRIDE_TTL_HEADROOM_MS = 60_000;

/**
 * A decision on Redis with the override keys' remaining time (on the test's clock) set in the same
 * transaction, so that the Lua's PTTL reads it less at most the milliseconds the transaction took;
 * every key is PERSISTed after it (Redis' own clock would otherwise expire them between steps).
 */
async function decideOnRedis(
  fn: string,
  keys: string[],
  args: (string | number)[],
  ttls: [key: string, ms: number][],
): Promise<{ reply?: unknown; error?: string; spanMs: number; pttls: number[] }> {
  const transaction = redis.multi().time();
  for (const [key, ms] of ttls) transaction.pexpire(key, ms);
  transaction.call(fn.startsWith('sliding_peek') ? 'FCALL_RO' : 'FCALL', fn, keys.length, ...keys, ...args.map(String));
  for (const key of keys) transaction.pttl(key).persist(key);
  transaction.time();
  const results = (await transaction.exec()) ?? [];
  const millisOf = (time: unknown) => {
    const [seconds, micros] = time as [string, string];
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  const spanMs = millisOf(results[results.length - 1][1]) - millisOf(results[0][1]);
  const [error, reply] = results[1 + ttls.length];
  const pttls = keys.map((_, i) => Number(results[2 + ttls.length + 2 * i][1]));
  return error ? { error: errorText(error), spanMs, pttls } : { reply, spanMs, pttls };
}

describe('overrides that expire, on Redis and in the model', () => {
  it('apply until the millisecond they expire, then no more, with the same replies and keys on both', async () => {
    const coverage: ExpiringCoverage = { applied: 0, afterExpiry: 0, atExpiry: 0, fromOverrideTtl: 0, blocked: 0 };
    await fc.assert(
      fc.asyncProperty(expiringRun, async ({ rules, steps }) => {
        await redis.flushdb();
        redis.expiresAt.clear();
        let now = T0;
        const model = new SlidingWindowModel({ clock: () => now });
        const limitKey = (key: number) => `x:{k}:${key}`;
        const overrideKey = (key: number) => `${limitKey(key)}|override`;
        // Each override's expiry on the test's clock, kept for Redis by Redis' rule (not the model's).
        const expiresAt = new Map<number, number>();
        /** Keys whose override has expired: a decision on them sees none. */
        const expired = new Set<number>();
        let members = 0;
        for (const [index, step] of steps.entries()) {
          const rule = rules[step.key];
          const expiries = [...expiresAt.values()];
          now += {
            zero: 0,
            small: step.gapRoll % 10,
            any: step.gapRoll % (2 * rule.windowMs),
            expiry: expiries.length > 0 ? Math.max(0, expiries[step.gapRoll % expiries.length] + step.offset - now) : 0,
          }[step.gapKind];
          await redis.expireUpTo(now);
          for (const [key, at] of expiresAt) {
            if (now <= at) continue;
            expect(await plain.del(overrideKey(key))).toBe(1);
            expiresAt.delete(key);
            expired.add(key);
          }
          const context = `step ${index} at T0+${now - T0}: ${JSON.stringify(step)}`;
          if (step.op === 'set' || step.op === 'unset') {
            const key = overrideKey(step.key);
            expect({ context, deleted: await plain.del(key) }).toEqual({ context, deleted: model.del(key) });
            expiresAt.delete(step.key);
            expired.delete(step.key);
            if (step.op === 'unset') continue;
            await plain.hset(key, ...step.fields);
            model.hset(key, step.fields);
            model.pexpire(key, step.ttlMs);
            expiresAt.set(step.key, now + step.ttlMs);
            continue;
          }
          const keys = step.stacked ? [0, 1] : [step.key];
          const cost = 1 + (step.costRoll % Math.min(...keys.map((key) => rules[key].limit)));
          const quadruples = keys.flatMap((key) => {
            const { windowMs, limit, precisionMs, shadow } = rules[key];
            return [windowMs, limit, precisionMs, (shadow ? 1 : 0) + 2];
          });
          const callKeys = [...keys.map(limitKey), ...keys.map(overrideKey)];
          const fn = step.op === 'peek' ? 'sliding_peek_v2' : 'sliding_allow_v2';
          const args =
            step.op === 'peek' ? [now, cost, ...quadruples] : [now, `m${members++}`, 1_000_000, cost, ...quadruples];
          const ttls = keys.flatMap((key): [string, number][] => {
            const at = expiresAt.get(key);
            // The override's TTL on the test's clock, plus real time for Redis to keep it until the test
            // deletes it at its expiry: a TTL of a few ms ran out on Redis' own clock between two
            // steps of a busy host. Replies read from the TTL are compared less the headroom below.
            return at === undefined ? [] : [[overrideKey(key), at - now + OVERRIDE_TTL_HEADROOM_MS]];
          });
          const remaining = keys.map((key) => model.pttl(overrideKey(key)));
          const fromRedis = await decideOnRedis(fn, callKeys, args, ttls);
          const fromModel = await settle(() =>
            Promise.resolve(model.call(fn, callKeys, args.map(String), step.op === 'peek')),
          );
          const { spanMs, pttls, ...redisOutcome } = fromRedis;
          // A Retry-After read from an override's PTTL: Redis read it up to the transaction's duration
          // (and the 1 ms above) later than the model did.
          if (Array.isArray(redisOutcome.reply) && Array.isArray(fromModel.reply)) {
            const redisReply = [...(redisOutcome.reply as number[])];
            const modelReply = fromModel.reply as number[];
            keys.forEach((key, i) => {
              const at = 1 + 7 * i + 3;
              if (remaining[i] < 0 || modelReply[at] !== remaining[i] || modelReply[1 + 7 * i] === 1) return;
              coverage.fromOverrideTtl++;
              const fromTtl = redisReply[at] - OVERRIDE_TTL_HEADROOM_MS;
              if (Math.abs(fromTtl - modelReply[at]) <= spanMs + 1) redisReply[at] = modelReply[at];
            });
            redisOutcome.reply = redisReply;
          }
          expect({ context, ...redisOutcome }).toEqual({ context, ...fromModel });
          for (const [i, key] of callKeys.entries()) {
            const modelPttl = model.pttl(key);
            expect({ context, key, exists: pttls[i] !== -2 }).toEqual({ context, key, exists: modelPttl !== -2 });
            // Limit keys expire on the test's clock as in the model (their TTLs are compared in 2.).
            if (i < keys.length) {
              if (modelPttl >= 0) redis.expiresAt.set(key, now + modelPttl);
              else redis.expiresAt.delete(key);
            }
          }
          if (!Array.isArray(fromModel.reply)) continue;
          const reply = fromModel.reply as number[];
          keys.forEach((key, i) => {
            const kind = reply[1 + 7 * i + 6];
            if (kind > 0) coverage.applied++;
            if (kind === 3) coverage.blocked++;
            if (expired.has(key)) coverage.afterExpiry++;
            if (kind > 0 && expiresAt.get(key) === now) coverage.atExpiry++;
          });
        }
        await expectSameKeys(redis, model, 'x:*');
      }),
      checkParameters(150),
    );
    for (const [kind, count] of Object.entries(coverage)) {
      expect({ kind, reached: count > 0 }).toEqual({ kind, reached: true });
    }
  }, 180_000);
});
