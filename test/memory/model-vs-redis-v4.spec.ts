import fc from 'fast-check';
import type Redis from 'ioredis';
import { SlidingWindowModel } from '../../lib/memory/sliding-window-model';
import { readLibrarySource, toScript } from '../../lib/redis/lua-library';
import { ensureLibraries } from '../support/lua-functions';
import { useOwnRedisServer } from '../support/own-redis';
import { VirtualTimeRedis, type TtlObservation } from '../support/virtual-time-redis';
import {
  T0,
  checkParameters,
  compareCall,
  discardIfExpiredInRealTime,
  errorText,
  garbage,
  jsonField,
  mixed,
  nextTime,
  sameTtl,
  timeMove,
  type TimeMove,
} from './redis-comparison';

/*
 * rate_limit_v4 (v3 plus shadow limits, per-key overrides, a key keeping its precision): the model
 * against the Lua on a real redis-server, and v4's promises checked on Redis (and in the model).
 *
 * 1. Random ARGV, garbage included, for the v4 functions (and v3's on the same keys), with override
 *    hashes valid and not, through FCALL / FCALL_RO and EVAL and the model: same replies, errors,
 *    keys and TTLs.
 * 2. Random sequences on keys with fixed limits (modes, precisions, costs, overrides set and
 *    deleted, stacked and batched calls, retries, v3 calls, time going back and forth): the same at
 *    every step.
 * 3. On Redis, checked against the model call by call: several precisions on one key keep the
 *    bucketed window's promises (no lock-out); a shadow limit alone would refuse exactly what it
 *    refuses enforced; a shadow limit stacked on an enforced one records what both admit; v3 and v4
 *    alternating on the same keys decide as v4 alone.
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

const V4_FUNCTIONS = ['sliding_allow_v4', 'sliding_allow_many_v4', 'sliding_peek_v4'] as const;
const scripts = new Map(
  [
    ...V4_FUNCTIONS.map((fn) => ['rate_limit_v4.lua', fn] as const),
    ['rate_limit_v3.lua', 'sliding_allow_v3'] as const,
    ['rate_limit_v3.lua', 'sliding_peek_v3'] as const,
  ].map(([file, fn]) => [fn, toScript(readLibrarySource(file), fn).source]),
);

/** Every key under `pattern`: the same keys, types, entries and fields (in order when compact) in Redis and the model. */
async function expectSameKeys(client: VirtualTimeRedis, model: SlidingWindowModel, pattern: string): Promise<void> {
  const keys = (await client.keys(pattern)).sort();
  expect(keys).toEqual(model.keys());
  for (const key of keys) {
    const type = await client.type(key);
    expect({ key, type }).toEqual({ key, type: model.type(key) });
    if (type === 'zset') {
      const flat = (await client.zrange(key, 0, -1, 'WITHSCORES')) as string[];
      const entries = [];
      for (let i = 0; i < flat.length; i += 2) entries.push({ member: flat[i], score: Number(flat[i + 1]) + 0 });
      expect({ key, entries }).toEqual({
        key,
        entries: model.entries(key).map(({ member, score }) => ({ member, score: score + 0 })),
      });
    } else {
      const fields = ((await client.call('HGETALL', key)) as unknown[]).map(String);
      const pairs: [string, string][] = [];
      for (let i = 0; i < fields.length; i += 2) pairs.push([fields[i], fields[i + 1]]);
      if ((await client.object('ENCODING', key)) === 'listpack') {
        expect({ key, fields: pairs }).toEqual({ key, fields: model.hash(key) });
      } else {
        expect({ key, fields: pairs.sort() }).toEqual({ key, fields: model.hash(key).sort() });
      }
    }
  }
}

/** A call's reply, or its error text, so both sides compare with toEqual. */
async function settle(call: () => Promise<unknown>): Promise<{ reply?: unknown; error?: string }> {
  try {
    return { reply: await call() };
  } catch (error) {
    return { error: errorText(error) };
  }
}

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
const FLAGS = fc.constantFrom(0, 0, 1, 2, 2, 3);

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
  | { kind: 'call'; fn: string; keys: string[]; args: string[]; readOnly: boolean; decisions?: number }
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
        fn: 'sliding_allow_v4',
        keys: all,
        args: [now, m, s, c, ...quadruples],
        readOnly: false,
      })),
  );
  const peek = keysArb.chain((keys) =>
    fc.tuple(maybe(TIMES), cost, limitsFor(keys, clean)).map(([now, c, { keys: all, quadruples }]) => ({
      kind: 'call' as const,
      fn: 'sliding_peek_v4',
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
    fn: 'sliding_allow_many_v4',
    keys: decisions.flatMap((d) => d.keys),
    args: [s, `[${decisions.flatMap((d) => d.fields).join(',')}]`],
    readOnly: false,
    decisions: decisions.length,
  }));
  const v3 = fc.tuple(fc.constantFrom(...RAW_KEYS), TIMES, member, cost).chain(([key, now, m, c]) =>
    tripleFor(key, true, fc.constantFrom('2', '3', '5')).map((triple) => ({
      kind: 'call' as const,
      fn: 'sliding_allow_v3',
      keys: [rawName(key)],
      args: [now, m, '1000', c, ...triple],
      readOnly: false,
    })),
  );
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
          weight: 1,
          arbitrary: fc.constantFrom(
            ['action', 'bogus'],
            ['action', 'limit'],
            ['action', 'limit', 'limit', 'x'],
            ['note', 'n'],
          ),
        },
      ),
    )
    .map(([key, fields]) => ({ kind: 'override' as const, key: rawOverride(key), fields }));
  const del = fc
    .constantFrom(...RAW_KEYS)
    .chain((key) => fc.constantFrom(rawName(key), rawOverride(key)).map((k) => ({ kind: 'del' as const, key: k })));
  // A log written where an override belongs: reading it as an override is WRONGTYPE, on both sides.
  const misplaced = fc.tuple(fc.constantFrom(...RAW_KEYS), MEMBERS).map(([key, m]) => ({
    kind: 'call' as const,
    fn: 'sliding_allow_v4',
    keys: [rawOverride(key)],
    args: [String(T0), m, '1000', '1', '1000', '5', '0', '0'],
    readOnly: false,
  }));
  return fc.oneof(
    { weight: 1, arbitrary: misplaced },
    { weight: 8, arbitrary: allow },
    { weight: 2, arbitrary: peek },
    { weight: 3, arbitrary: batch },
    { weight: 2, arbitrary: v3 },
    { weight: 2, arbitrary: override },
    { weight: 1, arbitrary: del },
  );
}

const freeForm: fc.Arbitrary<RawAction> = fc
  .record({
    fn: fc.constantFrom(...V4_FUNCTIONS),
    keys: fc.array(fc.constantFrom(...RAW_KEYS.map(rawName), rawOverride('a')), { maxLength: 3 }),
    args: fc.array(fc.oneof(TIMES, LOG_WINDOWS, FLAGS.map(String), MEMBERS, garbage), { maxLength: 12 }),
  })
  .map((call) => ({ kind: 'call' as const, ...call, readOnly: call.fn === 'sliding_peek_v4' }));

const rawAction = fc.oneof(
  { weight: 12, arbitrary: rawCall(true) },
  { weight: 4, arbitrary: rawCall(false) },
  { weight: 1, arbitrary: freeForm },
);

interface RawCoverage {
  replies: number;
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
    const script = viaScript ? scripts.get(action.fn) : undefined;
    const answer = await compareCall(rawRedis, model, action, action.keys, context, script);
    if (answer.reply) {
      coverage.replies++;
      if (action.fn.endsWith('_v4')) {
        const stride = 7;
        const values = answer.reply.map(Number);
        // Single calls only: a batch's decisions have limits of their own counts.
        if (action.fn !== 'sliding_allow_many_v4') {
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
  }
  await expectSameKeys(rawRedis, model, 'raw:*');
}

describe.each([
  ['FCALL / FCALL_RO', false],
  ['EVAL (script mode)', true],
] as const)('v4 raw calls through %s: the model gives the Lua’s replies, errors and keys', (_label, viaScript) => {
  it('for random ARGV, valid and garbage, with override hashes valid and not', async () => {
    const coverage: RawCoverage = {
      replies: 0,
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
      checkParameters(viaScript ? 120 : 250),
    );
    for (const [kind, count] of Object.entries(coverage)) {
      expect({ kind, reached: count > 0 }).toEqual({ kind, reached: true });
    }
  }, 120_000);
});
