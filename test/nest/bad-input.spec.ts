import { Body, Controller, Get, Logger, Param, Post, Query, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import Redis from 'ioredis';
import {
  DEFAULT_FUNCTION_NAME,
  MemoryBackend,
  RateLimitConfigError,
  RateLimitModule,
  SlidingLimit,
  SlidingWindowLimiter,
  type RateLimitModuleOptions,
} from '../../lib';
import { ensureLibraries } from '../support/lua-functions';
import { PLATFORMS, startTestApp, type TestApp } from '../support/nest-app';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { rejectionOf } from '../support/rejection';
import { TEST_LIMITER_SETTINGS, testLimiter } from '../support/test-limiter';

/*
 * Every public entry point fed bad input, one table per entry point. Each row names the input and
 * the outcome it must get: a RateLimitConfigError naming the option, or a documented safe outcome.
 * None may crash the process, write a key it should not, leave a key without TTL, or print a Redis
 * password. (The CLI's arguments are covered by the CLI's own tests.)
 */

const PASSWORD = 's3cret-pw';

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url);
  await ensureLibraries(redis);
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** The error bootstrap fails with, or undefined when it succeeds (the app is closed either way). */
async function bootstrapError(
  imports: NonNullable<Parameters<typeof Test.createTestingModule>[0]['imports']>,
  controllers: Type[] = [],
): Promise<unknown> {
  let app;
  try {
    const moduleRef = await Test.createTestingModule({ imports, controllers }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await app?.close();
  }
}

/** The module on this file's server, with the test settings (no instance report, a timeout of seconds). */
function moduleOnServer() {
  return RateLimitModule.forRoot({ ...TEST_LIMITER_SETTINGS, redis: server.url });
}

/** Keys written by rate limiting (the limiter's own instance reports aside). */
async function limitKeys(): Promise<string[]> {
  return (await redis.keys('*')).filter((key) => !key.includes('__nsl:instance:')).sort();
}

// ------------------------------------------------------------------------------------------------
// Module options
// ------------------------------------------------------------------------------------------------

describe('RateLimitModule.forRoot options', () => {
  const url = () => server.url;
  const SKEW = 'maxClockSkewMs must be a whole number of milliseconds from 0 to 3600000, got';
  const TIMEOUT = 'timeoutMs must be a whole number of milliseconds from 1 to 60000, got';
  const KEY_PREFIX = 'keyPrefix must be a string of at most 128 characters without { or }, got';
  const BATCH = 'batch must be true, false or { maxSize: 1 … 1000 }, got';
  /** [label, options over `{ redis: <the server> }`, what the problems must say]. */
  const rows: [string, Record<string, unknown>, string][] = [
    [
      'no connection at all',
      { redis: undefined },
      'set redis (a URL such as "redis://127.0.0.1:6379", or ioredis options), client',
    ],
    ['two connections', { backend: new MemoryBackend() }, 'set only one of redis, client, backend and store'],
    [
      'a URL without scheme',
      { redis: 'localhost:6379' },
      'redis must be a redis:// or rediss:// URL, got "localhost:6379"',
    ],
    ['a URL of another scheme', { redis: 'http://127.0.0.1:6379' }, 'redis must be a redis:// or rediss:// URL'],
    ['redis as a number', { redis: 6379 }, 'redis must be a URL string or ioredis options, got 6379'],
    [
      'client that is not a client',
      { redis: undefined, client: { host: 'x' } },
      'client must be an ioredis Redis or Cluster instance',
    ],
    ['an unknown option', { keyprefix: 'x' }, 'unknown option keyprefix; did you mean keyPrefix?'],
    [
      "@nestjs/throttler's ttl and limit at the top",
      { ttl: 60_000 },
      'unknown option ttl; did you mean defaultLimit: { limit, windowMs }?',
    ],
    [
      'an option nothing resembles',
      { flavour: 'x' },
      'unknown option flavour; known options: redis, client, backend, store,',
    ],
    [
      'a defaultLimit with a typo',
      { defaultLimit: { limit: 10, ttl: 1000 } },
      'defaultLimit has an unknown option ttl; did you mean windowMs?',
    ],
    [
      'an unknown function name',
      { functionName: 'sliding_allow_v9' },
      'functionName "sliding_allow_v9" is not a shipped function; known: sliding_allow_v1, sliding_allow_v2',
    ],
    ['a function name of another type', { functionName: 2 }, 'functionName 2 is not a shipped function'],
    ['a negative maxClockSkewMs', { maxClockSkewMs: -1 }, `${SKEW} -1`],
    ['an absurd maxClockSkewMs', { maxClockSkewMs: 1e12 }, `${SKEW} 1000000000000`],
    ['a fractional maxClockSkewMs', { maxClockSkewMs: 1.5 }, `${SKEW} 1.5`],
    ['a NaN maxClockSkewMs', { maxClockSkewMs: Number.NaN }, `${SKEW} NaN`],
    ['a maxClockSkewMs string', { maxClockSkewMs: '5' }, `${SKEW} "5"`],
    ['a zero timeoutMs', { timeoutMs: 0 }, `${TIMEOUT} 0`],
    ['an absurd timeoutMs', { timeoutMs: 1e9 }, `${TIMEOUT} 1000000000`],
    [
      'a keyPrefix over 128 characters',
      { keyPrefix: 'p'.repeat(129) },
      'keyPrefix must be a string of at most 128 characters',
    ],
    ['a keyPrefix that is not a string', { keyPrefix: 42 }, `${KEY_PREFIX} 42`],
    ['a keyPrefix with a hash tag', { keyPrefix: '{rl}:' }, `${KEY_PREFIX} "{rl}:"`],
    [
      'an unknown loadFunctions',
      { loadFunctions: 'sometimes' },
      'loadFunctions must be one of auto, verify, off, got "sometimes"',
    ],
    ['an unknown mode', { mode: 'eval' }, 'mode must be one of auto, function, script, got "eval"'],
    [
      'an unknown clock',
      { clock: 'utc' },
      "clock must be 'local', 'server' or a function returning epoch milliseconds",
    ],
    ['a batch of no decisions', { batch: { maxSize: 0 } }, `${BATCH} an object`],
    ['a batch that is not an object', { batch: 16 }, `${BATCH} 16`],
    [
      'an unknown onRedisError',
      { onRedisError: 'retry' },
      'onRedisError must be one of allow, deny, throw, got "retry"',
    ],
    [
      'a block cache of no entries',
      { blockCache: { maxEntries: 0 } },
      'blockCache must be true, false or { maxEntries: 1',
    ],
    [
      'a fractional insurance maxKeys',
      { insurance: { maxKeys: 1.5 } },
      'insurance must be true, false or { maxKeys: 1',
    ],
    ['a report that is a string', { report: 'yes' }, 'report must be true, false or'],
    [
      'a report interval of 5 ms',
      { report: { intervalMs: 5 } },
      'report.intervalMs must be a whole number of milliseconds from 100 to 86400000, got 5',
    ],
    [
      'a report id with a space',
      { report: { instanceId: 'web 1' } },
      'report.instanceId must be 1 to 200 characters without spaces, got "web 1"',
    ],
    ['a logger without methods', { logger: {} }, 'logger must have log(message) and warn(message)'],
    [
      'a canary of 101 %',
      { canary: { functionName: 'sliding_allow_v1', percent: 101 } },
      'canary.percent must be a number from 0 to 100, got 101',
    ],
    ['an unknown header style', { headers: 'all' }, 'headers must be one of legacy, draft, both, none, got "all"'],
    ['a global that is not boolean', { global: 'yes' }, 'global must be true or false, got "yes"'],
    ['a bad default key', { key: 'usr' }, 'key "usr": unknown part "usr"'],
    [
      'a bad defaultLimit',
      { defaultLimit: { limit: 0, windowMs: 1000 } },
      'defaultLimit.limit must be a whole number from 1 to 1000000, got 0',
    ],
    [
      'a defaultLimit with a bad precisionMs',
      { defaultLimit: { limit: 10, windowMs: 1000, precisionMs: 0 } },
      'defaultLimit.precisionMs must be a whole number of milliseconds from 1 to windowMs (1000)',
    ],
    [
      'a defaultLimit with a cost of 0',
      { defaultLimit: { limit: 10, windowMs: 1000, cost: 0 } },
      'defaultLimit.cost must be a whole number from 1, or a function of the request, got 0',
    ],
  ];

  it.each(rows)('%s: fails bootstrap naming the option', async (_label, options, expected) => {
    const error = await bootstrapError([
      RateLimitModule.forRoot({ redis: url(), ...options } as RateLimitModuleOptions),
    ]);
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as RateLimitConfigError).problems.join('\n')).toContain(expected);
    expect(await limitKeys()).toEqual([]);
  });

  it('forRootAsync whose factory returns no object: fails bootstrap saying so', async () => {
    const error = await bootstrapError([RateLimitModule.forRootAsync({ useFactory: () => null as never })]);
    expect((error as RateLimitConfigError).problems).toEqual(['RateLimitModule options must be an object, got null']);
  });

  it('empty strings from the environment (RATE_LIMIT_FUNCTION=) count as not set: the defaults apply', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRootAsync({
          useFactory: () => ({
            redis: url(),
            functionName: '',
            keyPrefix: '',
            mode: '' as never,
            headers: '' as never,
            report: false,
          }),
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    try {
      await app.init();
      const limiter = app.get(SlidingWindowLimiter);
      expect([limiter.functionName, limiter.keyPrefix]).toEqual([DEFAULT_FUNCTION_NAME, 'rl:']);
    } finally {
      await app.close();
    }
  });

  it('forRoot(null): throws at once, before any module is built', () => {
    expect(() => RateLimitModule.forRoot(null as never)).toThrow(TypeError);
  });

  it('reports every problem together', async () => {
    const error = await bootstrapError([
      RateLimitModule.forRoot({ redis: 'nope', mode: 'x', maxClockSkewMs: -1 } as never),
    ]);
    expect((error as RateLimitConfigError).problems).toHaveLength(3);
  });

  describe('a password in the connection never shows in an error', () => {
    /** Everything a log line could print of an error: message, stack and own properties. */
    const printed = (error: unknown) =>
      `${(error as Error)?.message}\n${(error as Error)?.stack}\n${inspect(error, { depth: 5 })}`;
    /** ioredis options with the password, for a server that refuses the connection: no retries. */
    const unreachable = {
      host: '127.0.0.1',
      port: 1,
      password: PASSWORD,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    };

    it.each<[string, () => RateLimitModuleOptions, new (...args: never[]) => Error]>([
      [
        "ioredis options, server unreachable, loadFunctions 'verify'",
        () => ({ redis: unreachable, loadFunctions: 'verify', timeoutMs: 300 }),
        Error,
      ],
      [
        'a URL that parses, with a bad option',
        () => ({ redis: `redis://:${PASSWORD}@127.0.0.1:${server.port}`, mode: 'x' as never }),
        RateLimitConfigError,
      ],
      ['a URL of another scheme', () => ({ redis: `http://user:${PASSWORD}@127.0.0.1:6379` }), RateLimitConfigError],
      ['a URL that does not parse', () => ({ redis: `redis://:${PASSWORD}@127.0.0.1:notaport` }), RateLimitConfigError],
    ])('%s: fails bootstrap without the password', async (_label, options, expected) => {
      const error = await bootstrapError([RateLimitModule.forRoot(options())]);
      expect(error).toBeInstanceOf(expected);
      expect(printed(error)).not.toContain(PASSWORD);
    });

    it("a server that accepts but never answers (SIGSTOP), loadFunctions 'verify': fails bootstrap by the start-up timeout, without the password", async () => {
      const frozen = await startRedisServer();
      frozen.process.kill('SIGSTOP');
      try {
        const started = Date.now();
        const error = await bootstrapError([
          RateLimitModule.forRoot({
            redis: { host: '127.0.0.1', port: frozen.port, password: PASSWORD },
            loadFunctions: 'verify',
            timeoutMs: 300,
          }),
        ]);
        // Without the bound, bootstrap would wait for ever (ioredis queues commands until it connects).
        // The bound is max(timeoutMs, 2 s), not timeoutMs (300).
        expect(error).toMatchObject({
          name: 'RedisUnavailableError',
          reason: 'timeout',
          message: 'Redis did not answer within 2000 ms',
        });
        expect(printed(error)).not.toContain(PASSWORD);
        // The start-up bound, 1 to 1.25 × max(timeoutMs, 2 s), and a loaded host's late timer: not for ever.
        expect(Date.now() - started).toBeLessThan(5000);
      } finally {
        frozen.process.kill('SIGCONT');
        await frozen.stop();
      }
    });

    it("the same with loadFunctions 'auto': the application starts (decisions follow onRedisError), and the warning has no password", async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      try {
        const error = await bootstrapError([RateLimitModule.forRoot({ redis: unreachable, timeoutMs: 300 })]);
        expect(error).toBeUndefined();
        const warnings = warn.mock.calls.map((call) => String(call[0]));
        expect(warnings.some((message) => message.startsWith('Start-up did not finish ('))).toBe(true);
        expect(warnings.join('\n')).not.toContain(PASSWORD);
      } finally {
        warn.mockRestore();
      }
    });

    // ioredis' ReplyError keeps the AUTH command, password included, in `command.args`: the limiter scrubs it.
    it('a wrong password: bootstrap fails without the password in the error', async () => {
      const guarded = await startRedisServer();
      const admin = new Redis(guarded.url);
      try {
        await admin.config('SET', 'requirepass', 'the-right-one');
        const error = await bootstrapError([
          RateLimitModule.forRoot({ redis: `redis://:${PASSWORD}@127.0.0.1:${guarded.port}` }),
        ]);
        expect((error as Error).message).toMatch(/WRONGPASS/);
        expect(printed(error)).not.toContain(PASSWORD);
      } finally {
        admin.disconnect();
        await guarded.stop();
      }
    });
  });
});

// ------------------------------------------------------------------------------------------------
// Decorator options
// ------------------------------------------------------------------------------------------------

describe('@SlidingLimit options', () => {
  /** A controller with one handler decorated with `options` (or the class, when `onClass`). */
  function controllerWith(options: unknown, onClass = false): Type {
    if (onClass) {
      @Controller('class-row')
      @SlidingLimit(options as never)
      class ClassRowController {
        @Get()
        list(): string {
          return 'ok';
        }
      }
      return ClassRowController;
    }
    @Controller('row')
    class RowController {
      @Get()
      @SlidingLimit(options as never)
      handler(): string {
        return 'ok';
      }
    }
    return RowController;
  }

  const LIMIT = '@SlidingLimit.limit must be a whole number from 1 to 1000000, got';
  const WINDOW = '@SlidingLimit.windowMs must be a whole number of milliseconds from 1 to 31622400000, got';
  const NAME = '@SlidingLimit.name must be 1 to 64 letters, digits, "_", "-" or ".", got';
  const PRECISION = '@SlidingLimit.precisionMs must be a whole number of milliseconds';
  const COST = '@SlidingLimit.cost must be a whole number from 1, or a function of the request,';
  const KEY = '@SlidingLimit.key';
  const ONE = { limit: 1, windowMs: 1000 };
  const rows: [string, unknown, string][] = [
    ['limit 0', { limit: 0, windowMs: 1000 }, `${LIMIT} 0`],
    ['limit -1', { limit: -1, windowMs: 1000 }, `${LIMIT} -1`],
    ['limit 1.5', { limit: 1.5, windowMs: 1000 }, `${LIMIT} 1.5`],
    ['limit NaN', { limit: Number.NaN, windowMs: 1000 }, `${LIMIT} NaN`],
    ['limit "5"', { limit: '5', windowMs: 1000 }, `${LIMIT} "5"`],
    ['limit Infinity', { limit: Infinity, windowMs: 1000 }, `${LIMIT} Infinity`],
    ['limit above the maximum', { limit: 1_000_001, windowMs: 1000 }, `${LIMIT} 1000001`],
    ['windowMs 0', { limit: 1, windowMs: 0 }, `${WINDOW} 0`],
    ['windowMs negative', { limit: 1, windowMs: -1000 }, `${WINDOW} -1000`],
    ['windowMs fractional', { limit: 1, windowMs: 0.5 }, `${WINDOW} 0.5`],
    ['windowMs beyond a year', { limit: 1, windowMs: 31_622_400_001 }, `${WINDOW} 31622400001`],
    ['limit missing', { windowMs: 1000 }, `${LIMIT} undefined`],
    ['windowMs missing', { limit: 1 }, `${WINDOW} undefined`],
    ['no options at all', undefined, '@SlidingLimit must be an object with limit and windowMs, got undefined'],
    ['a key template with an unknown part', { ...ONE, key: 'usr:id' }, `${KEY} "usr:id": unknown part "usr:id"`],
    ['a key template with an empty path', { ...ONE, key: 'body:' }, `${KEY} "body:": part "body:"`],
    ['a key template naming a part twice', { ...ONE, key: 'ip+ip' }, `${KEY} "ip+ip": part "ip" appears twice`],
    ['a key template reaching for the prototype', { ...ONE, key: 'user:__proto__..x' }, `${KEY} "user:__proto__..x"`],
    ['a key that is a number', { ...ONE, key: 42 }, `${KEY} must be a key template string or a function`],
    ['a name with a space', { ...ONE, name: 'bad name' }, `${NAME} "bad name"`],
    ['a name opening a hash tag', { ...ONE, name: '{x}' }, `${NAME} "{x}"`],
    ['a name with a colon', { ...ONE, name: 'a:b' }, `${NAME} "a:b"`],
    ['an empty name', { ...ONE, name: '' }, `${NAME} ""`],
    ['a name over 64 characters', { ...ONE, name: 'n'.repeat(65) }, NAME],
    [
      'a log limit above the maximum, named with the option that allows it',
      { limit: 2_000_000, windowMs: 1000 },
      `${LIMIT} 2000000 (the log keeps one entry per request; set precisionMs for a bounded-memory window`,
    ],
    [
      'a bucketed limit above its maximum',
      { limit: 2e12, windowMs: 60_000, precisionMs: 1000 },
      '@SlidingLimit.limit must be a whole number from 1 to 1000000000000, got 2000000000000',
    ],
    ['precisionMs 0', { ...ONE, precisionMs: 0 }, `${PRECISION} from 1 to windowMs (1000)`],
    ['precisionMs negative', { ...ONE, precisionMs: -5 }, `${PRECISION} from 1 to windowMs`],
    ['precisionMs fractional', { ...ONE, precisionMs: 2.5 }, `${PRECISION} from 1 to windowMs`],
    ['precisionMs "60"', { ...ONE, precisionMs: '60' }, `${PRECISION} from 1 to windowMs`],
    ['precisionMs above the window', { ...ONE, precisionMs: 2000 }, `${PRECISION} from 1 to windowMs`],
    [
      'more than 1000 sub-windows',
      { limit: 1, windowMs: 60_000, precisionMs: 10 },
      `${PRECISION} from 60 to windowMs (60000), at most 1000 sub-windows per window, got 10`,
    ],
    ['cost 0', { limit: 5, windowMs: 1000, cost: 0 }, `${COST} got 0`],
    ['cost -1', { limit: 5, windowMs: 1000, cost: -1 }, `${COST} got -1`],
    ['cost 1.5', { limit: 5, windowMs: 1000, cost: 1.5 }, `${COST} got 1.5`],
    ['cost NaN', { limit: 5, windowMs: 1000, cost: Number.NaN }, `${COST} got NaN`],
    ['cost "2"', { limit: 5, windowMs: 1000, cost: '2' }, `${COST} got "2"`],
    ['cost above the limit', { limit: 5, windowMs: 1000, cost: 6 }, 'cost 6 is more than the limit 5'],
    [
      'a cost above 10,000 on a log limit',
      { limit: 100_000, windowMs: 1000, cost: 20_000 },
      'cost 20000 is more than 10000, the most a request may weigh in a log limit (one entry per unit); give the limit precisionMs',
    ],
  ];

  it.each(rows)('%s: fails bootstrap naming the controller and handler', async (_label, options, expected) => {
    const error = await bootstrapError([moduleOnServer()], [controllerWith(options)]);
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as Error).message).toContain(`RowController.handler: ${expected}`);
  });

  it.each([
    ['ttl (as in @nestjs/throttler)', { limit: 5, ttl: 60_000 }, 'unknown option ttl; did you mean windowMs?'],
    ['a misspelt name', { limit: 5, windowMs: 1000, nmae: 'login' }, 'unknown option nmae; did you mean name?'],
    ['a case slip', { limit: 5, windowms: 1000 }, 'unknown option windowms; did you mean windowMs?'],
    [
      'an option nothing resembles',
      { limit: 5, windowMs: 1000, colour: 'red' },
      'unknown option colour; known options: limit, windowMs, precisionMs, key, name, onRedisError, cost',
    ],
  ])(
    'an unknown option, %s: fails bootstrap naming it, the controller and the handler',
    async (_label, options, expected) => {
      const error = await bootstrapError([moduleOnServer()], [controllerWith(options)]);
      expect(error).toBeInstanceOf(RateLimitConfigError);
      expect((error as Error).message).toContain(`RowController.handler: @SlidingLimit has an ${expected}`);
    },
  );

  it('on a class: fails bootstrap naming the controller', async () => {
    const error = await bootstrapError([moduleOnServer()], [controllerWith({ limit: 0, windowMs: 1000 }, true)]);
    expect((error as Error).message).toContain(`ClassRowController: ${LIMIT} 0`);
  });

  it.each([
    ['windowMs under a second (seconds meant?) starts, with a warning naming the handler and the window in ms', 60, 1],
    ['a window of a second or more gives no such warning', 1000, 0],
  ])('%s', async (_label, windowMs, warnings) => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const error = await bootstrapError([moduleOnServer()], [controllerWith({ limit: 5, windowMs })]);
      expect(error).toBeUndefined();
      const warned = warn.mock.calls.map((call) => String(call[0])).filter((line) => line.includes('milliseconds'));
      expect(warned).toEqual(
        Array(warnings).fill(
          expect.stringContaining(
            `RowController.handler: windowMs is ${windowMs} milliseconds; if ${windowMs} seconds were meant, write windowMs: ${windowMs}_000`,
          ),
        ),
      );
    } finally {
      warn.mockRestore();
    }
  });
});

describe('configuration errors: one prefix', () => {
  it('module options and decorator arguments fail with messages that start alike', async () => {
    const moduleError = await bootstrapError([RateLimitModule.forRoot({ redis: server.url, mode: 'x' as never })]);
    @Controller('prefix')
    class PrefixController {
      @Get()
      @SlidingLimit({ limit: 0, windowMs: 1000 })
      handler(): string {
        return 'ok';
      }
    }
    const decoratorError = await bootstrapError([moduleOnServer()], [PrefixController]);
    const limiterError = (() => {
      try {
        new SlidingWindowLimiter({ client: redis, keyPrefix: 42 as never });
      } catch (error) {
        return error;
      }
    })();
    for (const error of [moduleError, decoratorError, limiterError]) {
      expect(error).toBeInstanceOf(RateLimitConfigError);
      expect((error as Error).message).toMatch(/^nestjs-sliding-limit: invalid configuration/);
    }
    expect((moduleError as Error).message).toMatch(/^nestjs-sliding-limit: invalid configuration of RateLimitModule:/);
  });
});

// ------------------------------------------------------------------------------------------------
// Request-derived key parts, through real HTTP
// ------------------------------------------------------------------------------------------------

const PREFIX = 'bad-input:';
/** A bound on every key: prefix, name (≤ 64), braces, and an identity of one part and the IP fallback. */
const MAX_KEY_BYTES = PREFIX.length + 64 + 3 + 2 * (32 + 1 + 128) + 4 + 128;

@Controller('parts')
class KeyPartsController {
  @Get('query')
  @SlidingLimit({ name: 'query', limit: 100, windowMs: 60_000, key: 'query:v' })
  query(@Query('v') v: unknown): { v: unknown } {
    return { v };
  }

  @Get('param/:v')
  @SlidingLimit({ name: 'param', limit: 100, windowMs: 60_000, key: 'param:v' })
  param(@Param('v') v: string): { v: string } {
    return { v };
  }

  @Post('body')
  @SlidingLimit({ name: 'body', limit: 100, windowMs: 60_000, key: 'body:v' })
  body(@Body() _body: { v?: unknown }): { ok: true } {
    return { ok: true };
  }

  @Get('header')
  @SlidingLimit({ name: 'header', limit: 100, windowMs: 60_000, key: 'header:x-v' })
  header(): { ok: true } {
    return { ok: true };
  }

  @Get('fn')
  @SlidingLimit({ name: 'fn', limit: 100, windowMs: 60_000, key: (req: { query?: { v?: string } }) => req.query?.v })
  fn(): { ok: true } {
    return { ok: true };
  }

  @Get('both')
  @SlidingLimit({ name: 'both', limit: 100, windowMs: 60_000, key: 'query:v+header:x-v' })
  both(): { ok: true } {
    return { ok: true };
  }
}

const TEN_KB = 'k'.repeat(10 * 1024);
/** Request values, with the identity segment each must become (undefined: the part is missing). */
const VALUES: [string, string, string | undefined][] = [
  ['empty', '', undefined],
  ['10 KB long', TEN_KB, `%sha256.${createHash('sha256').update(TEN_KB).digest('hex')}`],
  ['an opening brace', '{', '%7B'],
  ['a closing brace', '}', '%7D'],
  ['a hash tag of its own', '{victim}', '%7Bvictim%7D'],
  ['braces reversed', '}{', '%7D%7B'],
  ['a colon', 'a:param.v:b', 'a%3Aparam.v%3Ab'],
  ['an asterisk', '*', '*'],
  ['a percent sign', '%41', '%2541'],
  ['the hashed form itself', '%sha256.00', '%25sha256.00'],
  ['a newline', 'a\nb', 'a%0Ab'],
  ['CR LF', 'a\r\nb', 'a%0D%0Ab'],
  ['a space', 'a b', 'a%20b'],
  ['unicode', 'ü', '%C3%BC'],
  ['an emoji', '😀', '%F0%9F%98%80'],
  ['a NUL', 'a\u0000b', 'a%00b'],
];
/** What an HTTP header carries unchanged (Node refuses other characters; servers trim spaces). */
const headerSafe = (value: string) => /^[\t\x20-\x7e\x80-\xff]*$/.test(value) && value.trim() === value;

describe.each(PLATFORMS)('request-derived key parts on %s', (platform) => {
  let app: TestApp;
  const statuses: number[] = [];

  beforeAll(async () => {
    await redis.flushdb();
    app = await startTestApp({
      platform,
      controllers: [KeyPartsController],
      options: { redis: server.url, keyPrefix: PREFIX },
    });
  });
  afterAll(() => app.close());

  /** The key of limit `name` for a part `label` whose value became `segment` (undefined: missing). */
  const expectKey = async (name: string, label: string | undefined, segment: string | undefined) => {
    const identity =
      segment === undefined
        ? `no-${label ?? 'key'}:ip:127.0.0.1`
        : label === undefined
          ? segment
          : `${label}:${segment}`;
    const key = `${PREFIX}${name}:{${identity}}`;
    expect({ key, exists: await redis.exists(key) }).toEqual({ key, exists: 1 });
  };

  describe.each(VALUES)('a value that is %s', (_label, value, segment) => {
    it('in the query string, a route parameter, the body, a key function and a header', async () => {
      const query = await app.http().get('/parts/query').query({ v: value });
      statuses.push(query.status);
      await expectKey('query', 'query.v', segment);

      if (value !== '') {
        const param = await app.http().get(`/parts/param/${encodeURIComponent(value)}`);
        if (platform === 'fastify' && encodeURIComponent(value).length > 100) {
          // Fastify refuses route parameters over maxParamLength (100) before any guard runs.
          expect(param.status).toBe(414);
        } else {
          statuses.push(param.status);
          await expectKey('param', 'param.v', segment);
        }
      }

      const body = await app.http().post('/parts/body').send({ v: value });
      statuses.push(body.status);
      await expectKey('body', 'body.v', segment);

      // A key function's value is the identity itself, encoded the same way.
      const fn = await app.http().get('/parts/fn').query({ v: value });
      statuses.push(fn.status);
      await expectKey('fn', undefined, segment);

      // Servers trim a header's surrounding spaces; Node refuses to send some characters at all.
      if (headerSafe(value)) {
        const header = await app.http().get('/parts/header').set('x-v', value);
        statuses.push(header.status);
        await expectKey('header', 'header.x-v', segment);
      }
    });
  });

  it('missing, repeated and nested values count as missing, per client IP', async () => {
    await app.http().get('/parts/query').expect(200);
    await app.http().get('/parts/query?v=1&v=2').expect(200);
    await app.http().get('/parts/query?v[a]=1').expect(200);
    await app
      .http()
      .post('/parts/body')
      .send({ v: { nested: 'x' } })
      .expect(201);
    await app
      .http()
      .post('/parts/body')
      .send({ v: ['x'] })
      .expect(201);
    await app.http().post('/parts/body').send({ v: null }).expect(201);
    await app.http().post('/parts/body').send('v=raw').set('content-type', 'text/plain').expect(201);
    await app.http().get('/parts/both').query({ v: '{x}' }).expect(200);
    expect(await redis.exists(`${PREFIX}query:{no-query.v:ip:127.0.0.1}`)).toBe(1);
    expect(await redis.exists(`${PREFIX}body:{no-body.v:ip:127.0.0.1}`)).toBe(1);
    expect(await redis.exists(`${PREFIX}both:{query.v:%7Bx%7D:no-header.x-v:ip:127.0.0.1}`)).toBe(1);
  });

  it('never failed a request, and left only bounded keys with a TTL inside the prefix', async () => {
    expect(statuses.length).toBeGreaterThan(VALUES.length * 4);
    expect(statuses.filter((status) => status !== 200 && status !== 201)).toEqual([]);
    const keys = await limitKeys();
    expect(keys.length).toBeGreaterThan(VALUES.length);
    for (const key of keys) {
      expect(key.startsWith(PREFIX)).toBe(true);
      // Exactly one hash tag, the identity's; the key is printable ASCII only.
      expect(key).toMatch(/^[^{}]+:\{[^{}]+\}$/);
      expect(key).toMatch(/^[\x21-\x7e]+$/);
      expect(Buffer.byteLength(key)).toBeLessThanOrEqual(MAX_KEY_BYTES);
      expect(await redis.pttl(key)).toBeGreaterThan(0);
    }
  });
});

// ------------------------------------------------------------------------------------------------
// Direct FCALL
// ------------------------------------------------------------------------------------------------

describe('direct FCALL with bad arguments', () => {
  const NOW = '1735660800000';
  const [V1, V2, PEEK, MANY] = ['sliding_allow_v1', 'sliding_allow_v2', 'sliding_peek_v2', 'sliding_allow_many_v2'];
  /** One limit's arguments to v2: window 1000 ms, limit 5, no precision, no flags. */
  const ONE_LIMIT = ['1000', '5', '0', '0'];
  /** [label, function, number of keys, arguments after the keys]. */
  const rows: [string, string, string[], string[]][] = [
    ['v1: no arguments', V1, ['k'], []],
    ['v1: no key', V1, [], [NOW, '1000', '5', 'm']],
    ['v1: member missing', V1, ['k'], [NOW, '1000', '5']],
    ['v1: member empty', V1, ['k'], [NOW, '1000', '5', '']],
    ['v1: now not a number', V1, ['k'], ['now', '1000', '5', 'm']],
    ['v1: now empty', V1, ['k'], ['', '1000', '5', 'm']],
    ['v1: now nan', V1, ['k'], ['nan', '1000', '5', 'm']],
    ['v1: now inf', V1, ['k'], ['inf', '1000', '5', 'm']],
    ['v1: now "*" (v1 has no server clock)', V1, ['k'], ['*', '1000', '5', 'm']],
    ['v1: window 0', V1, ['k'], [NOW, '0', '5', 'm']],
    ['v1: window negative', V1, ['k'], [NOW, '-1000', '5', 'm']],
    ['v1: window overflowing to inf', V1, ['k'], [NOW, '1e400', '5', 'm']],
    ['v1: limit 0', V1, ['k'], [NOW, '1000', '0', 'm']],
    ['v1: limit fractional', V1, ['k'], [NOW, '1000', '1.5', 'm']],
    ['v1: limit -0', V1, ['k'], [NOW, '1000', '-0', 'm']],
    ['v1: limit with junk', V1, ['k'], [NOW, '1000', '5 apples', 'm']],
    // v2: now, member, skew, cost, then per limit window, limit, precision and flags.
    ['v2: argument count short (no flags)', V2, ['k'], [NOW, 'm', '0', '1', '1000', '5', '0']],
    ['v2: argument count long', V2, ['k'], [NOW, 'm', '0', '1', '1000', '5', '0', '0', '1']],
    ['v2: no key', V2, [], [NOW, 'm', '0', '1']],
    ['v2: a key twice', V2, ['k', 'k'], [NOW, 'm', '0', '1', ...ONE_LIMIT, ...ONE_LIMIT]],
    ['v2: member empty', V2, ['k'], [NOW, '', '0', '1', '1000', '5', '0', '0']],
    ['v2: member with a space', V2, ['k'], [NOW, 'a b', '0', '1', '1000', '5', '0', '0']],
    ['v2: member with a #', V2, ['k'], [NOW, 'a#2', '0', '1', '1000', '5', '0', '0']],
    ['v2: now not a number', V2, ['k'], ['soon', 'm', '0', '1', '1000', '5', '0', '0']],
    ['v2: now "**"', V2, ['k'], ['**', 'm', '0', '1', '1000', '5', '0', '0']],
    ['v2: skew negative', V2, ['k'], [NOW, 'm', '-1', '1', '1000', '5', '0', '0']],
    ['v2: skew nan', V2, ['k'], [NOW, 'm', 'nan', '1', '1000', '5', '0', '0']],
    ['v2: second window 0', V2, ['k', 'j'], [NOW, 'm', '0', '1', ...ONE_LIMIT, '0', '5', '0', '0']],
    ['v2: second limit 2.5', V2, ['k', 'j'], [NOW, 'm', '0', '1', ...ONE_LIMIT, '1000', '2.5', '0', '0']],
    ['v2: cost 0', V2, ['k'], [NOW, 'm', '0', '0', '1000', '5', '0', '0']],
    ['v2: cost fractional', V2, ['k'], [NOW, 'm', '0', '1.5', '1000', '5', '0', '0']],
    ['v2: cost nan', V2, ['k'], [NOW, 'm', '0', 'nan', '1000', '5', '0', '0']],
    ['v2: cost over a limit', V2, ['k', 'j'], [NOW, 'm', '0', '3', ...ONE_LIMIT, '1000', '2', '0', '0']],
    ['v2: precision negative', V2, ['k'], [NOW, 'm', '0', '1', '1000', '5', '-1', '0']],
    ['v2: precision fractional', V2, ['k'], [NOW, 'm', '0', '1', '1000', '5', '0.5', '0']],
    ['v2: precision above the window', V2, ['k'], [NOW, 'm', '0', '1', '1000', '5', '1001', '0']],
    ['v2: over 1000 sub-windows', V2, ['k'], [NOW, 'm', '0', '1', '100000', '5', '99', '0']],
    ['v2: flags out of range', V2, ['k'], [NOW, 'm', '0', '1', '1000', '5', '0', '4']],
    ['v2: an override flag without its key', V2, ['k'], [NOW, 'm', '0', '1', '1000', '5', '0', '2']],
    ['peek: no limit', PEEK, ['k'], [NOW, '1']],
    ['peek: a key twice', PEEK, ['k', 'k'], [NOW, '1', ...ONE_LIMIT, ...ONE_LIMIT]],
    ['peek: now inf', PEEK, ['k'], ['-inf', '1', '1000', '5', '0', '0']],
    ['peek: limit 0', PEEK, ['k'], [NOW, '1', '1000', '0', '0', '0']],
    ['peek: cost above the limit', PEEK, ['k'], [NOW, '6', '1000', '5', '0', '0']],
    ['batch: a decision without its flags', MANY, ['k'], ['0', JSON.stringify([Number(NOW), 'm', 1, 1, 1000, 5, 0])]],
    [
      'batch: more keys than decisions take',
      MANY,
      ['k', 'j'],
      ['0', JSON.stringify([Number(NOW), 'm', 1, 1, 1000, 5, 0, 0])],
    ],
  ];

  it.each(rows)('%s: ERR invalid arguments, nothing written', async (_label, fn, keys, args) => {
    const prefix = `fcall:${Math.random().toString(36).slice(2)}:`;
    const fresh = keys.map((key) => `${prefix}${key}`);
    const existing = `${prefix}existing`;
    await redis.fcall('sliding_allow_v2', 1, existing, NOW, 'seed', '0', '1', '60000', '5', '0', '0');
    const before = { entries: await redis.zrange(existing, 0, '-1', 'WITHSCORES'), ttl: await redis.pttl(existing) };

    // Once on fresh keys, once with the existing key in place of the first one.
    const withExisting = fresh.map((key) => (key === fresh[0] ? existing : key));
    for (const callKeys of fresh.length > 0 ? [fresh, withExisting] : [fresh]) {
      const call = fn.startsWith('sliding_peek_')
        ? redis.fcall_ro(fn, callKeys.length, ...callKeys, ...args)
        : redis.fcall(fn, callKeys.length, ...callKeys, ...args);
      await expect(call).rejects.toThrow(/^ERR invalid arguments$/);
    }
    for (const key of fresh) expect(await redis.exists(key)).toBe(0);
    expect(await redis.zrange(existing, 0, '-1', 'WITHSCORES')).toEqual(before.entries);
    expect(await redis.pttl(existing)).toBeLessThanOrEqual(before.ttl);
    expect(await redis.pttl(existing)).toBeGreaterThan(before.ttl - 1000);
  });

  // A window ≥ 1e17 ms would make PEXPIRE's argument print as "1e+17", which Redis refuses after the
  // entry is written: the Lua refuses windows over 1e15 ms before any write.
  it.each([
    ['sliding_allow_v1', [NOW, '1e17', '5', 'm']],
    ['sliding_allow_v2', [NOW, 'm', '0', '1', '1e17', '5', '0', '0']],
    ['sliding_allow_v1', [NOW, '1.000000000000001e15', '5', 'm']],
  ])('%s with an absurd window refuses before writing', async (fn, args) => {
    const key = `fcall:huge:${fn}:${args[1]}`;
    await expect(redis.fcall(fn, 1, key, ...args)).rejects.toThrow(/^ERR invalid arguments$/);
    expect(await redis.exists(key)).toBe(0);
  });
});

// ------------------------------------------------------------------------------------------------
// Limiter methods
// ------------------------------------------------------------------------------------------------

describe('SlidingWindowLimiter arguments', () => {
  let limiter: SlidingWindowLimiter;
  beforeAll(() => {
    limiter = testLimiter({ client: redis, keyPrefix: 'limiter-args:', functionName: 'sliding_allow_v1' });
  });
  afterAll(() => limiter.close());

  const ok = { limit: 5, windowMs: 1000 };
  const rows: [string, (l: SlidingWindowLimiter) => Promise<unknown>, string][] = [
    ['consume: empty key', (l) => l.consume('', ok), 'key 0 must be a non-empty string, got ""'],
    ['consume: key not a string', (l) => l.consume(42 as never, ok), 'key 0 must be a non-empty string, got 42'],
    [
      'consume: no rule',
      (l) => l.consume('k', undefined as never),
      'rule must be an object with limit and windowMs, got undefined',
    ],
    [
      'consume: limit 0',
      (l) => l.consume('k', { limit: 0, windowMs: 1000 }),
      'rule.limit must be a whole number from 1 to 1000000, got 0',
    ],
    [
      'consume: limit "5"',
      (l) => l.consume('k', { limit: '5' as never, windowMs: 1000 }),
      'rule.limit must be a whole number from 1 to 1000000, got "5"',
    ],
    [
      'consume: windowMs NaN',
      (l) => l.consume('k', { limit: 5, windowMs: Number.NaN }),
      'rule.windowMs must be a whole number of milliseconds from 1 to 31622400000, got NaN',
    ],
    [
      'consume: windowMs beyond a year',
      (l) => l.consume('k', { limit: 5, windowMs: 1e15 }),
      'rule.windowMs must be a whole number of milliseconds',
    ],
    [
      'consume: an unknown onRedisError',
      (l) => l.consume('k', ok, { onRedisError: 'later' as never }),
      'onRedisError must be one of allow, deny, throw',
    ],
    ['consumeAll: no limits', (l) => l.consumeAll([]), 'at least one limit is required'],
    ['consumeAll: not an array', (l) => l.consumeAll('k' as never), 'at least one limit is required'],
    [
      'consumeAll: a key twice',
      (l) =>
        l.consumeAll([
          { key: 'k', ...ok },
          { key: 'k', ...ok },
        ]),
      'each stacked limit needs its own key',
    ],
    [
      'consumeAll: one bad rule',
      (l) =>
        l.consumeAll([
          { key: 'k', ...ok },
          { key: 'j', limit: -1, windowMs: 1000 },
        ]),
      'limits[1].limit must be a whole number',
    ],
    [
      'peek: limit fractional',
      (l) => l.peek('k', { limit: 2.5, windowMs: 1000 }),
      'rule.limit must be a whole number from 1 to 1000000, got 2.5',
    ],
    ['consume: cost 0', (l) => l.consume('k', ok, { cost: 0 }), 'cost must be a whole number from 1'],
    ['consume: cost "2"', (l) => l.consume('k', ok, { cost: '2' as never }), 'cost must be a whole number from 1'],
    ['consume: cost above the limit', (l) => l.consume('k', ok, { cost: 6 }), 'cost 6 is more than the limit 5'],
    [
      'consume: a cost above 10,000 on a log rule',
      (l) => l.consume('k', { limit: 100_000, windowMs: 1000 }, { cost: 10_001 }),
      'cost 10001 is more than 10000, the most a request may weigh in a log limit',
    ],
    [
      'consumeAll: cost above one stacked limit',
      (l) =>
        l.consumeAll(
          [
            { key: 'k', limit: 10, windowMs: 1000 },
            { key: 'j', limit: 3, windowMs: 1000 },
          ],
          { cost: 4 },
        ),
      'cost 4 is more than the limit 3',
    ],
    [
      'consume: precisionMs above the window',
      (l) => l.consume('k', { limit: 5, windowMs: 1000, precisionMs: 5000 }),
      'rule.precisionMs must be a whole number of milliseconds from 1 to windowMs (1000)',
    ],
    [
      'consume: a cost on sliding_allow_v1',
      (l) => l.consume('k', ok, { cost: 2 }),
      'a cost (2) needs sliding_allow_v2, but this decision runs on sliding_allow_v1',
    ],
    [
      'peek: precisionMs on sliding_allow_v1',
      (l) => l.peek('k', { limit: 5, windowMs: 1000, precisionMs: 100 }),
      'precisionMs (the bounded-memory window) needs sliding_allow_v2',
    ],
    ['reset: empty key', (l) => l.reset(''), 'key 0 must be a non-empty string, got ""'],
    [
      'use: an unknown function',
      (l) => l.use('sliding_allow_v9'),
      'functionName "sliding_allow_v9" is not a shipped function',
    ],
    [
      'use: a canary over 100 %',
      (l) => l.use({ functionName: 'sliding_allow_v2', canary: { functionName: 'sliding_allow_v1', percent: 250 } }),
      'canary.percent must be a number from 0 to 100, got 250',
    ],
  ];

  it.each(rows)('%s: RateLimitConfigError naming the argument, nothing written', async (_label, call, expected) => {
    const error = await rejectionOf(call(limiter));
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as RateLimitConfigError).problems.join('\n')).toContain(expected);
    expect(await redis.keys('limiter-args:*')).toEqual([]);
  });

  it.each([
    ['no client or backend', {}, 'client must be an ioredis Redis or Cluster instance'],
    ['a client that is not one', { client: { get: () => 1 } }, 'client must be an ioredis Redis or Cluster instance'],
    [
      'an unknown function name',
      { client: null, backend: new MemoryBackend(), functionName: 'x' },
      'functionName "x" is not a shipped function',
    ],
  ])('construction with %s: RateLimitConfigError', (_label, options, expected) => {
    expect(() => new SlidingWindowLimiter(options as never)).toThrow(expected);
  });
});
