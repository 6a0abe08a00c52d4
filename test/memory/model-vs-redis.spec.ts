import fc from 'fast-check';
import { SlidingWindowLimiter, type SlidingLimitRule } from '../../lib';
import { MemoryBackend } from '../../lib/memory/memory-backend';
import { luaToNumber } from '../../lib/memory/lua-values';
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
  garbage,
  mixed,
  nextTime,
  sameTtl,
  timeMove,
  type TimeMove,
} from './redis-comparison';

/*
 * The reference model (lib/memory) against the Lua on a real redis-server, call by call.
 *
 * 1. Random sequences of consume / consumeAll / peek / reset through two SlidingWindowLimiters on the
 *    same injected clock, one on Redis and one on MemoryBackend, for sliding_allow_v1 (the log, cost
 *    1) and sliding_allow_v2 (costs, the log and the bucketed window), as functions and as scripts:
 *    same decisions, remaining, retryAfterMs, resetMs, peek counts and errors at every step, same
 *    TTLs, same keys and entries at the end.
 * 2. Random ARGV, garbage included, for sliding_allow_v1, sent as FCALL / FCALL_RO / EVAL and to the
 *    model: same replies, same errors, same keys. (v2's raw calls, and v1's on v2's keys:
 *    model-vs-redis-v2.spec.ts.) And now_ms "*" of v2: the model's clock, or Redis' TIME.
 * 3. The model's tonumber against Lua's.
 *
 * A failure prints fast-check's seed and path; replay it with FC_SEED=<seed> FC_PATH=<path>.
 * Redis' keys expire on the test's clock here (see VirtualTimeRedis).
 */

const KEY_POOL = 4;

const own = useOwnRedisServer();
let redis: VirtualTimeRedis;
/** Same server, integers as strings: replies of any size compare exactly. */
let rawRedis: VirtualTimeRedis;

beforeAll(async () => {
  redis = own.connect((url) => new VirtualTimeRedis(url));
  rawRedis = own.connect((url) => new VirtualTimeRedis(url, { stringNumbers: true }));
  await ensureLibraries(redis);
});

// ------------------------------------------------------------------------------------------------
// 1. Limiter on Redis vs limiter on the model
// ------------------------------------------------------------------------------------------------

/** `costRoll` picks a cost (v2): 1 mostly, else up to the smallest limit of the decision's keys. */
type Action =
  | { op: 'consume' | 'peek'; key: number; costRoll: number }
  | { op: 'reset'; key: number }
  | { op: 'consumeAll'; keys: number[]; costRoll: number };

interface Step {
  time: TimeMove;
  action: Action;
}

interface Scenario {
  maxClockSkewMs: number;
  /** The rule of each key of the pool: a key keeps its limit, as it does in an application. */
  rules: SlidingLimitRule[];
  /** Costs and precisionMs (v2, the full version); v1 gets neither. */
  full: boolean;
  steps: Step[];
}

const keyIndex = fc.nat(KEY_POOL - 1);
const windowMs = fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 5000 }));

const costRoll = fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(30) });
const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('consume' as const), key: keyIndex, costRoll }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('consumeAll' as const),
      keys: fc.uniqueArray(keyIndex, { minLength: 1, maxLength: 3 }),
      costRoll,
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('peek' as const), key: keyIndex, costRoll }) },
  { weight: 1, arbitrary: keyIndex.map((key) => ({ op: 'reset' as const, key })) },
);

/** A v2 rule: the log, or the bucketed window at a precision its window takes (≤ 1000 sub-windows). */
const fullRule: fc.Arbitrary<SlidingLimitRule> = fc.oneof(
  fc.record({ limit: fc.integer({ min: 1, max: 8 }), windowMs }),
  windowMs.chain((w) =>
    fc.record({
      limit: fc.integer({ min: 1, max: 12 }),
      windowMs: fc.constant(w),
      precisionMs: fc.integer({ min: Math.ceil(w / 1000), max: w }),
    }),
  ),
);

const scenarioOf = (full: boolean): fc.Arbitrary<Scenario> =>
  fc.record({
    maxClockSkewMs: fc.oneof(fc.constantFrom(0, 1, 1000), fc.nat(2000)),
    rules: fc.array(full ? fullRule : fc.record({ limit: fc.integer({ min: 1, max: 5 }), windowMs }), {
      minLength: KEY_POOL,
      maxLength: KEY_POOL,
    }),
    full: fc.constant(full),
    steps: fc.array(fc.record({ time: timeMove, action }), { minLength: 1, maxLength: 40 }),
  });

/** What happened in a run of scenarios, to show that each kind of case was reached. */
interface Coverage {
  allowed: number;
  rejected: number;
  clockSkew: number;
  /** Steps whose time was exactly one window after an entry of one of their keys. */
  onBoundary: number;
  /** Steps whose time was earlier than an earlier step's. */
  backwards: number;
}

const noCoverage = (): Coverage => ({ allowed: 0, rejected: 0, clockSkew: 0, onBoundary: 0, backwards: 0 });

async function perform(
  limiter: SlidingWindowLimiter,
  action: Action,
  rules: SlidingLimitRule[],
  full: boolean,
): Promise<unknown> {
  const name = (key: number) => `k${key}`;
  /** No options at all for v1 (the cost option is v2's). */
  const costOf = (keys: number[], roll: number) =>
    full ? { cost: 1 + (roll % Math.min(...keys.map((key) => rules[key].limit))) } : undefined;
  switch (action.op) {
    case 'consume':
      return limiter.consume(name(action.key), rules[action.key], costOf([action.key], action.costRoll));
    case 'peek':
      return limiter.peek(name(action.key), rules[action.key], costOf([action.key], action.costRoll));
    case 'reset':
      return { reset: await limiter.reset(name(action.key)) };
    case 'consumeAll':
      return limiter.consumeAll(
        action.keys.map((key) => ({ key: name(key), ...rules[key] })),
        costOf(action.keys, action.costRoll),
      );
  }
}

/** When the entries (log) or sub-windows (bucketed) of a key in the model leave its window. */
function leaveTimes(memory: MemoryBackend, key: string, { windowMs, precisionMs }: SlidingLimitRule): number[] {
  const type = memory.model.type(key);
  if (type === 'zset') return memory.entries(key).map((entry) => entry.score + windowMs);
  if (type === 'hash' && precisionMs !== undefined) {
    return memory
      .hash(key)
      .filter(([field]) => /^\d+$/.test(field)) // sub-windows, not the ids or the precision
      .map(([field]) => (Number(field) + 1) * precisionMs + windowMs - 1);
  }
  return [];
}

/** A bucketed key's fields, the ids as their number (each limiter makes its own). */
function countedFields(fields: [string, string][]): Record<string, string | number> {
  return Object.fromEntries(
    fields.map(([field, value]) => [field, field === 'ids' ? value.split(' ').length : value] as const),
  );
}

/** A call's result, or its error as name and message, so both sides compare with toEqual. */
async function settle(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return { result: await call() };
  } catch (error) {
    return { error: (error as Error).name, message: (error as Error).message };
  }
}

function keysOf(action: Action): number[] {
  return action.op === 'consumeAll' ? action.keys : [action.key];
}

/** The TTL each call left in Redis equals the model's (to the millisecond when observable exactly). */
function checkTtls(observations: TtlObservation[], memory: MemoryBackend, redisNowMs: number, context: string): void {
  for (const { key, pttl, spanMs } of observations) {
    const modelPttl = memory.pttl(key);
    discardIfExpiredInRealTime(pttl, modelPttl, spanMs);
    if (modelPttl === -2) {
      redis.expiresAt.delete(key); // gone in the model; the existence check compares Redis
      continue;
    }
    if (pttl === -1) {
      // The call set no TTL (a rejection): the key keeps the expiry it had, in both.
      expect({ context, key, expiresAt: redis.expiresAt.get(key) }).toEqual({
        context,
        key,
        expiresAt: redisNowMs + modelPttl,
      });
      continue;
    }
    const matches = sameTtl(BigInt(pttl), BigInt(modelPttl), spanMs);
    expect({ context, key, pttl: matches ? modelPttl : pttl }).toEqual({ context, key, pttl: modelPttl });
    redis.expiresAt.set(key, redisNowMs + modelPttl);
  }
}

async function sortedSet(key: string): Promise<[string, number][]> {
  const flat = await redis.zrange(key, 0, '-1', 'WITHSCORES');
  const entries: [string, number][] = [];
  for (let i = 0; i < flat.length; i += 2) entries.push([flat[i], Number(flat[i + 1])]);
  return entries;
}

/**
 * The scores of a key's entries, in order. Request ids are the limiters' own (a random prefix and a
 * counter, which the block cache does not advance), so the members themselves cannot match.
 */
const scoresOf = (entries: [string, number][]) => entries.map(([, score]) => score + 0);

interface LimiterConfig {
  functionName: string;
  mode: 'function' | 'script';
  /** The block cache of the limiter on Redis; the one on the model never has it. */
  blockCache: boolean;
  /** Time never goes back: a step that would go back stays where it is. */
  forwardOnly?: boolean;
}

async function runScenario(
  { functionName, mode, blockCache, forwardOnly }: LimiterConfig,
  { maxClockSkewMs, rules, full, steps }: Scenario,
  coverage: Coverage,
): Promise<void> {
  await redis.flushdb(); // functions and scripts stay
  redis.expiresAt.clear();
  redis.takeObservations();
  let now = T0;
  let latest = T0;
  /**
   * Redis' clock on the test's time line: the latest time any command has seen (it never goes back).
   * The model's store keeps the same clock; both start at T0, which the model reads here.
   */
  let redisNow = T0;
  const times: number[] = [];
  const clock = () => now;
  const keyPrefix = 'rl:';
  const settings = {
    functionName,
    clock,
    keyPrefix,
    maxClockSkewMs,
    onRedisError: 'throw' as const,
    timeoutMs: 60_000,
  };
  const memory = new MemoryBackend({ clock });
  const onRedis = new SlidingWindowLimiter({ ...settings, client: redis, mode, blockCache });
  const onModel = new SlidingWindowLimiter({ ...settings, backend: memory, blockCache: false });
  const fullKey = (key: number) => `${keyPrefix}k${key}`;
  memory.keys();
  try {
    for (const [index, { time, action }] of steps.entries()) {
      const first = keysOf(action)[0];
      const leaving = leaveTimes(memory, fullKey(first), rules[first]);
      const next = nextTime(time, now, latest, times, rules[first].windowMs, leaving, maxClockSkewMs);
      now = forwardOnly ? Math.max(now, next) : next;
      if (now < latest) coverage.backwards++;
      latest = Math.max(latest, now);
      redisNow = Math.max(redisNow, now);
      times.push(now);
      await redis.expireUpTo(redisNow);
      if (
        action.op !== 'reset' &&
        keysOf(action).some((key) => leaveTimes(memory, fullKey(key), rules[key]).includes(now))
      ) {
        coverage.onBoundary++;
      }

      const fromRedis = await settle(() => perform(onRedis, action, rules, full));
      const fromModel = await settle(() => perform(onModel, action, rules, full));
      const context = `step ${index} at T0${now - T0 >= 0 ? '+' : ''}${now - T0}: ${JSON.stringify(action)}`;
      expect({ context, ...(fromRedis as object) }).toEqual({ context, ...(fromModel as object) });
      checkTtls(redis.takeObservations(), memory, redisNow, context);
      for (const key of keysOf(action)) {
        expect({ context, key, exists: (await redis.exists(fullKey(key))) === 1 }).toEqual({
          context,
          key,
          exists: memory.pttl(fullKey(key)) !== -2,
        });
      }

      const outcome = fromModel as { result?: { allowed?: boolean }; error?: string };
      if (outcome.error === 'ClockSkewError') coverage.clockSkew++;
      if (action.op === 'consume' || action.op === 'consumeAll') {
        if (outcome.result?.allowed === true) coverage.allowed++;
        if (outcome.result?.allowed === false) coverage.rejected++;
      }
    }

    // The limiter's own bookkeeping (instance reports) is not part of the comparison.
    const redisKeys = (await redis.keys(`${keyPrefix}*`)).filter((key) => !key.includes('__nsl:')).sort();
    expect(redisKeys).toEqual(memory.keys());
    for (const key of redisKeys) {
      if ((await redis.type(key)) === 'hash') {
        expect({ key, fields: countedFields(Object.entries(await redis.hgetall(key))) }).toEqual({
          key,
          fields: countedFields(memory.hash(key)),
        });
      } else {
        expect({ key, scores: scoresOf(await sortedSet(key)) }).toEqual({
          key,
          scores: scoresOf(memory.entries(key).map(({ member, score }) => [member, score])),
        });
      }
      // Every key has a TTL, the model's.
      expect({ key, expiresAt: redis.expiresAt.get(key) }).toEqual({ key, expiresAt: redisNow + memory.pttl(key) });
    }
  } finally {
    onRedis.close();
    onModel.close();
  }
}

/**
 * The next step's time; `windowMs` and `leaving` (when its entries or sub-windows leave the window)
 * are those of the step's first key.
 */

describe.each([
  ['sliding_allow_v1', 'function'],
  ['sliding_allow_v2', 'function'],
  ['sliding_allow_v1', 'script'],
  ['sliding_allow_v2', 'script'],
] as const)('a limiter on MemoryBackend decides like one on Redis: %s, %s mode', (functionName, mode) => {
  it('at every step of random consume / consumeAll / peek / reset sequences, and leaves the same keys', async () => {
    const coverage = noCoverage();
    // v2: costs, and rules of both kinds (the log, the bucketed window).
    const scenarios = scenarioOf(functionName === 'sliding_allow_v2');
    await fc.assert(
      fc.asyncProperty(scenarios, (s) => runScenario({ functionName, mode, blockCache: false }, s, coverage)),
      checkParameters(150),
    );
    // The runs reached every kind of case the property is about.
    expect(coverage.allowed).toBeGreaterThan(0);
    expect(coverage.rejected).toBeGreaterThan(0);
    expect(coverage.onBoundary).toBeGreaterThan(0);
    expect(coverage.backwards).toBeGreaterThan(0);
    if (functionName !== 'sliding_allow_v1') expect(coverage.clockSkew).toBeGreaterThan(0);
    else expect(coverage.clockSkew).toBe(0); // v1 has no skew check
  }, 60_000);
});

describe('the block cache (limiter on Redis) against the model without one', () => {
  // With one clock that never goes back, Redis' key expiry and the caller's window agree, and a
  // cached rejection is what Redis would answer. (With a caller whose clock lags Redis' they need
  // not: Redis may already have expired a key whose rejection the cache still serves. Not claimed.)
  it.each(['sliding_allow_v2', 'sliding_allow_v1'])(
    '%s: answers every step as Redis without the cache would',
    async (functionName) => {
      const coverage = noCoverage();
      await fc.assert(
        fc.asyncProperty(scenarioOf(functionName === 'sliding_allow_v2'), (s) =>
          runScenario({ functionName, mode: 'function', blockCache: true, forwardOnly: true }, s, coverage),
        ),
        checkParameters(100),
      );
      expect(coverage.rejected).toBeGreaterThan(0);
      expect(coverage.onBoundary).toBeGreaterThan(0);
    },
    60_000,
  );
});

// ------------------------------------------------------------------------------------------------
// 2. Raw calls: random ARGV, garbage included
// ------------------------------------------------------------------------------------------------

/** The model's clock in the raw runs: fixed, so only a PEXPIRE ≤ 0 makes a key expire. */
const MODEL_NOW = 1_000_000;

// Times that repeat and sit on, just before and just after the windows' boundaries.
const timeArg = mixed(
  fc
    .constantFrom(0, 0, 1, 2, 4, 5, 6, 99, 100, 101, 999, 1000, 1001, 4999, 5000, 5001, -1, -10, -1000, -1001, -3000)
    .map((d) => String(T0 + d)),
);
// Huge values too: a window whose TTL PEXPIRE cannot take, a limit whose remaining overflows the reply.
const windowArg = mixed(
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('1', '5', '100', '1000', '5000') },
    { weight: 1, arbitrary: fc.constantFrom('0.5', '2.5', '1e3', '9007199254740993', '1e17', '1e300') },
  ),
);
const limitArg = mixed(fc.constantFrom('1', '2', '3', '5', '1', '2', '3', '5', '1e20'));
const memberArg = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('m1', 'm2', 'm3', 'm4') },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'ü', '\u0000') },
);
const anyArg = fc.oneof(timeArg, windowArg, limitArg, memberArg, garbage);
const rawKey = fc.constantFrom('a', 'b', 'c');

interface RawCall {
  fn: 'sliding_allow_v1';
  keys: string[];
  args: string[];
  /** FCALL_RO, which refuses a function without the no-writes flag (v1's), in Redis and the model. */
  readOnly: boolean;
}

const wellFormed: fc.Arbitrary<Omit<RawCall, 'readOnly'>> = fc
  .tuple(rawKey, timeArg, windowArg, limitArg, memberArg)
  .map(([key, ...args]) => ({ fn: 'sliding_allow_v1' as const, keys: [key], args }));
// Any number of keys (none is invalid; v1 reads the first) and of arguments (v1 ignores a fifth).
const freeForm: fc.Arbitrary<Omit<RawCall, 'readOnly'>> = fc.record({
  fn: fc.constant('sliding_allow_v1' as const),
  keys: fc.array(rawKey, { maxLength: 3 }),
  args: fc.array(anyArg, { maxLength: 6 }),
});
const rawCall: fc.Arbitrary<RawCall> = fc
  .tuple(
    fc.oneof({ weight: 4, arbitrary: wellFormed }, { weight: 1, arbitrary: freeForm }),
    fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  )
  .map(([call, readOnly]) => ({ ...call, readOnly }));

const V1_SCRIPT = toScript(readLibrarySource('rate_limit_v1.lua'), 'sliding_allow_v1').source;

// No batch replies and no CLOCKSKEW to reach here: v1 decides one key per call and takes the
// caller's time as is.
interface RawCoverage {
  replies: number;
  invalidArguments: number;
  /** Errors raised by a command inside the Lua (PEXPIRE of a number it cannot take) after writes. */
  commandErrors: number;
  /** Reply integers that only the C cast explains (the minimum 64-bit integer). */
  castOverflow: number;
  /** FCALL_RO refused (v1 writes); EVAL has no read-only form, so script mode never gets there. */
  readOnlyRefused: number;
}

async function runRawCalls(calls: RawCall[], viaScript: boolean, coverage: RawCoverage): Promise<void> {
  await rawRedis.flushdb();
  rawRedis.takeObservations();
  const model = new SlidingWindowModel({ clock: () => MODEL_NOW });
  for (const [index, call] of calls.entries()) {
    const keys = call.keys.map((key) => `raw:{t}:${key}`);
    const context = `call ${index}: ${JSON.stringify({ ...call, keys })}`;
    const fromModel = await compareCall(rawRedis, model, call, keys, context, viaScript ? V1_SCRIPT : undefined);

    if (fromModel.reply) coverage.replies++;
    if (fromModel.reply?.includes('-9223372036854775808')) coverage.castOverflow++;
    if (fromModel.error === 'ERR invalid arguments') coverage.invalidArguments++;
    if (fromModel.error?.startsWith('ERR value is not an integer')) coverage.commandErrors++;
    if (fromModel.error?.includes('with write flag using *_ro command')) coverage.readOnlyRefused++;
  }

  const keys = (await rawRedis.keys('raw:*')).sort();
  expect(keys).toEqual(model.keys());
  for (const key of keys) {
    const flat = (await rawRedis.zrange(key, 0, '-1', 'WITHSCORES')) as string[];
    const entries = [];
    for (let i = 0; i < flat.length; i += 2) entries.push({ member: flat[i], score: Number(flat[i + 1]) + 0 });
    expect({ key, entries }).toEqual({
      key,
      entries: model.entries(key).map(({ member, score }) => ({ member, score: score + 0 })),
    });
  }
}

describe.each([
  ['FCALL / FCALL_RO', false],
  ['EVAL (script mode)', true],
] as const)('v1 raw calls through %s: the model gives the Lua’s replies, errors and keys', (_label, viaScript) => {
  it('for random ARGV, valid and garbage', async () => {
    const coverage: RawCoverage = {
      replies: 0,
      invalidArguments: 0,
      commandErrors: 0,
      castOverflow: 0,
      readOnlyRefused: 0,
    };
    await fc.assert(
      fc.asyncProperty(fc.array(rawCall, { minLength: 1, maxLength: 25 }), (calls) =>
        runRawCalls(calls, viaScript, coverage),
      ),
      checkParameters(300),
    );
    expect(coverage.replies).toBeGreaterThan(0);
    expect(coverage.invalidArguments).toBeGreaterThan(0);
    // A command failing inside the function (PEXPIRE refusing "1e+17") would have written before
    // failing; windows over 1e15 ms are refused up front, so no ARGV may get there.
    expect(coverage.commandErrors).toBe(0);
    expect(coverage.castOverflow).toBeGreaterThan(0);
    if (viaScript) expect(coverage.readOnlyRefused).toBe(0);
    else expect(coverage.readOnlyRefused).toBeGreaterThan(0);
  }, 60_000);
});

describe('now_ms "*" (the server clock)', () => {
  it('is the model’s clock in the model, and Redis TIME in Redis', async () => {
    // now, member, max_skew_ms, cost, then the limit: window 1000, limit 2, the log (precision 0), enforced.
    const args = ['*', 'm1', '0', '1', '1000', '2', '0', '0'];
    // Admitted, with room; counted 1, remaining 1, no retry_after_ms, reset in 1000 ms, limit 2, no override.
    const reply = [1, 1, 1, 1, 0, 1000, 2, 0];
    const model = new SlidingWindowModel({ clock: () => T0 + 0.75 });
    expect(model.call('sliding_allow_v2', ['k'], args)).toEqual(reply);
    expect(model.entries('k')).toEqual([{ member: 'm1', score: T0 }]);

    await redis.del('star');
    const before = Date.now();
    expect(await redis.fcall('sliding_allow_v2', 1, 'star', ...args)).toEqual(reply);
    const [, score] = await redis.zrange('star', 0, '-1', 'WITHSCORES');
    expect(Number(score)).toBeGreaterThanOrEqual(before - 1000);
    expect(Number(score)).toBeLessThanOrEqual(Date.now() + 1000);
    expect(Number.isInteger(Number(score))).toBe(true);
  });
});

// ------------------------------------------------------------------------------------------------
// 3. tonumber
// ------------------------------------------------------------------------------------------------

const space = fc.constantFrom('', ' ', '  ', '\t', '\n', '\v', '\f', '\r');
const digitString = (max: number) =>
  fc.array(fc.constantFrom(...'0123456789'), { maxLength: max }).map((d) => d.join(''));
const hexString = (max: number) =>
  fc.array(fc.constantFrom(...'0123456789abcdefABCDEF'), { maxLength: max }).map((d) => d.join(''));
const numberBody = fc.oneof(
  fc
    .tuple(
      digitString(20),
      fc.constantFrom('', '.'),
      digitString(20),
      fc.oneof(
        fc.constant(''),
        fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digitString(4)).map((p) => p.join('')),
      ),
    )
    .map((p) => p.join('')),
  fc
    .tuple(
      fc.constantFrom('0x', '0X'),
      hexString(18),
      fc.constantFrom('', '.'),
      hexString(6),
      fc.oneof(
        fc.constant(''),
        fc.tuple(fc.constantFrom('p', 'P'), fc.constantFrom('', '-'), digitString(4)).map((p) => p.join('')),
      ),
    )
    .map((p) => p.join('')),
  fc.constantFrom('inf', 'INF', 'infinity', 'Infinity', 'infin', 'nan', 'NaN', 'nan()', 'nan(abc_1)', 'nan(x', 'x', ''),
  // 53 bits, then exactly half of the last one: rounding must go to even (and glibc's subnormal rounding).
  fc
    .tuple(
      hexString(12).map((d) => d.padEnd(12, '0')),
      fc.constantFrom(...'0123456789abcdef'),
      fc.constantFrom('', '0', '000', '001'),
      fc.constantFrom('', 'p0', 'p-1074', 'p-1100', 'p970'),
    )
    .map(([digits, last, zeros, exponent]) => `0x1${digits}${last}8${zeros}${exponent}`),
);
const numberLike = fc
  .tuple(
    space,
    fc.constantFrom('', '+', '-'),
    numberBody,
    space,
    fc.constantFrom('', '', 'x', 'abc', '\u0000junk', ' 1'),
  )
  .map((p) => p.join(''));

describe('tonumber', () => {
  it('reads strings as Lua 5.1 in Redis does (spaces, hex, exponents, inf, nan, trailing junk, NUL)', async () => {
    const show = (n: number | undefined) =>
      n === undefined ? null : Number.isNaN(n) ? 'nan' : Object.is(n, -0) ? '-0' : String(n);
    const lua =
      "local n = tonumber(ARGV[1]) if n == nil then return false end if n ~= n then return 'nan' end return string.format('%.17g', n)";
    const fromLua = (text: unknown) =>
      text === null
        ? null
        : text === 'nan'
          ? 'nan'
          : text === '-0'
            ? '-0'
            : String(Number(String(text).replace('inf', 'Infinity')));
    await fc.assert(
      fc.asyncProperty(fc.oneof(numberLike, garbage), async (text) => {
        const expected = fromLua(await redis.eval(lua, 0, text));
        expect({ text, value: show(luaToNumber(text)) }).toEqual({ text, value: expected });
      }),
      // The example: a subnormal whose correct rounding is one ulp above glibc's.
      { ...checkParameters(1500), examples: [['0x100000000a000080p-1100']] },
    );
  });
});
