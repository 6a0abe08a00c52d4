/*
 * Loading and recovery: what the limiter does when the Redis side is missing its Lua, holds
 * other code under our library name, loses its functions or scripts under traffic, or restarts
 * empty. Every test here flushes functions, scripts or data, so the file runs its own
 * redis-server and never touches the shared one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import {
  FunctionCodeMismatchError,
  FunctionNameTakenError,
  FunctionNotLoadedError,
  SlidingWindowLimiter,
  type SlidingWindowLimiterOptions,
} from '../../lib';
import { useOwnRedisServer } from '../support/own-redis';
import { RedisServer, startRedisServer, startRedisServerOnPort } from '../support/redis-server';
import { recordingLogger } from '../support/recording-logger';
import { sleep } from '../support/sleep';
import { testLimiter, useTestLimiters } from '../support/test-limiter';
import { startTraffic, type TrafficCall } from '../support/traffic';
import { rejectionOf } from '../support/rejection';
import { librarySource } from '../support/lua-functions';
import { commandStats, listLibraries } from '../support/redis-inspect';
import { LIMITER_DEFAULTS } from '../../lib/limiter/limiter-options';
import { OVERRIDE_CHANGES_CHANNEL } from '../../lib/redis/override-changes';
import { waitFor } from '../support/wait-for';

type Version = 'v1' | 'v2';
const FUNCTION_OF: Record<Version, string> = { v1: 'sliding_allow_v1', v2: 'sliding_allow_v2' };
const LIBRARY_OF: Record<Version, string> = { v1: 'rate_limit_v1', v2: 'rate_limit_v2' };
const BUNDLED: Record<Version, string> = { v1: librarySource('v1'), v2: librarySource('v2') };
/** Same library name and function name as the bundled v2, other code: what a hand edit on a server looks like. */
const IMPOSTOR_V2 =
  "#!lua name=rate_limit_v2\nredis.register_function('sliding_allow_v2', function(keys, args) return {1, 1, 99, 0, 0} end)\n";

/**
 * How long after a restart calls may still be degraded: the client's reconnect delay (50 ms here),
 * one call's two attempts (each timed out within 1.25 × timeoutMs) and a second of a loaded two-core
 * host's scheduling.
 */
const DEGRADED_AFTER_RESTART_MS = 50 + 2.5 * LIMITER_DEFAULTS.timeoutMs + 1000;

/**
 * Runs 40 consume loops over `keys` and flushes four times (`flush`) while they run, with 50 calls
 * before, between and after the flushes; what the calls came to.
 */
async function flushedUnderTraffic(limiter: SlidingWindowLimiter, keys: string[], flush: () => Promise<unknown>) {
  const traffic = startTraffic(limiter, keys, { concurrency: 40 });
  for (let i = 0; i < 4; i++) {
    await traffic.moreCalls(50);
    await flush();
  }
  await traffic.moreCalls(50);
  return summary(await traffic.stop());
}

/** Sum of ZCARD over keys (each under `prefix`). */
async function totalEntries(client: Redis, keys: string[], prefix: string): Promise<number> {
  const counts = await Promise.all(keys.map((key) => client.zcard(prefix + key)));
  return counts.reduce((sum, n) => sum + n, 0);
}

/** Calls that succeeded and were admitted, and those that threw. */
function summary(calls: TrafficCall[]) {
  const succeeded = calls.filter((call) => call.error === undefined);
  return {
    succeeded: succeeded.length,
    allowed: succeeded.filter((call) => call.allowed).length,
    failures: calls.filter((call) => call.error !== undefined),
  };
}

describe('loading and recovery (own redis-server)', () => {
  const own = useOwnRedisServer();
  let admin: Redis;
  let address: string;

  /** A client for a limiter. */
  const connect = (): Redis =>
    own.connect((url) => {
      const client = new Redis(url);
      client.on('error', () => undefined); // reconnects are expected in these tests
      return client;
    });
  // 'throw' surfaces every failure, which is what these tests look at (the default fails open). On
  // v2 unless a test says otherwise: the libraries these tests inspect are v2's.
  const limiters = useTestLimiters(() => ({
    keyPrefix: 'rl:',
    onRedisError: 'throw',
    functionName: 'sliding_allow_v2',
    logger: silentLogger(),
  }));
  const limiterWith = (options: SlidingWindowLimiterOptions = {}) => limiters({ client: connect(), ...options });

  beforeAll(() => {
    admin = own.connect((url) => new Redis(url, { protocol: 2 }));
    address = `127.0.0.1:${own.server().port}`;
  });

  beforeEach(async () => {
    await admin.call('FUNCTION', 'FLUSH');
    await admin.script('FLUSH');
    await admin.flushall();
    await admin.config('RESETSTAT');
  });

  describe("loadFunctions: 'auto'", () => {
    it.each<Version>(['v1', 'v2'])(
      'init() loads the missing %s library, exactly as bundled, and only that one',
      async (version) => {
        expect(await listLibraries(admin)).toEqual([]);
        const limiter = limiterWith({ functionName: FUNCTION_OF[version], loadFunctions: 'auto' });

        await limiter.init();

        expect(limiter.mode).toBe('function');
        const libraries = await listLibraries(admin);
        expect(libraries.map((lib) => lib.name)).toEqual([LIBRARY_OF[version]]);
        expect(libraries[0].code).toBe(BUNDLED[version]);
        expect(libraries[0].functions).toContain(FUNCTION_OF[version]);
        const decision = await limiter.consume('k', { limit: 3, windowMs: 1000 });
        expect(decision).toMatchObject({ allowed: true, remaining: 2, functionName: FUNCTION_OF[version] });
      },
    );

    it('without init(), the first consume loads the library of its function', async () => {
      const limiter = limiterWith({ loadFunctions: 'auto' });
      expect(await limiter.consume('k', { limit: 2, windowMs: 1000 })).toMatchObject({ allowed: true, remaining: 1 });
      expect((await listLibraries(admin)).map((lib) => lib.name)).toEqual(['rate_limit_v2']);
    });

    it('several instances starting at once on an empty server all come up (the losers of the FUNCTION LOAD race accept identical code)', async () => {
      const limiters = Array.from({ length: 6 }, () => limiterWith({ loadFunctions: 'auto' }));
      await expect(Promise.all(limiters.map((limiter) => limiter.init()))).resolves.toHaveLength(6);
      const libraries = await listLibraries(admin);
      expect(libraries).toEqual([expect.objectContaining({ name: 'rate_limit_v2', code: BUNDLED.v2 })]);
      const decisions = await Promise.all(
        limiters.map((limiter) => limiter.consume('shared', { limit: 4, windowMs: 60_000 })),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(4);
    });
  });

  describe("loadFunctions: 'verify'", () => {
    it('init() rejects with FunctionNotLoadedError naming the function, the node and the load command, and loads nothing', async () => {
      const limiter = limiterWith({ functionName: 'sliding_allow_v2', loadFunctions: 'verify' });

      const error = await rejectionOf(limiter.init());

      expect(error).toBeInstanceOf(FunctionNotLoadedError);
      const notLoaded = error as FunctionNotLoadedError;
      expect(notLoaded.message).toContain('sliding_allow_v2');
      expect(notLoaded.message).toContain(address);
      expect(notLoaded.message).toMatch(/FUNCTION LOAD .*rate_limit_v2\.lua/);
      expect(notLoaded.nodes).toEqual([address]);
      expect(await listLibraries(admin)).toEqual([]);
    });

    it('the same instance comes up once an operator has loaded the library', async () => {
      const limiter = limiterWith({ functionName: 'sliding_allow_v1', loadFunctions: 'verify' });
      await expect(limiter.init()).rejects.toThrow(FunctionNotLoadedError);

      await admin.call('FUNCTION', 'LOAD', BUNDLED.v1);

      await expect(limiter.init()).resolves.toBeUndefined();
      expect(await limiter.consume('k', { limit: 1, windowMs: 1000 })).toMatchObject({ allowed: true, remaining: 0 });
    });
  });

  describe("loadFunctions: 'off'", () => {
    it('init() loads nothing, and a consume fails with FunctionNotLoadedError', async () => {
      const limiter = limiterWith({ functionName: 'sliding_allow_v2', loadFunctions: 'off' });

      await limiter.init();
      expect(await listLibraries(admin)).toEqual([]);

      const error = await rejectionOf(limiter.consume('k', { limit: 1, windowMs: 1000 }));
      expect(error).toBeInstanceOf(FunctionNotLoadedError);
      expect((error as Error).message).toContain('sliding_allow_v2');
      await expect(limiter.peek('k', { limit: 1, windowMs: 1000 })).rejects.toThrow(FunctionNotLoadedError);
      expect(await listLibraries(admin)).toEqual([]);
      expect(await admin.exists('rl:k')).toBe(0);
    });
  });

  describe('another library registering our function name', () => {
    it('fails start-up with FunctionNameTakenError instead of calling the impostor', async () => {
      const admin = connect();
      await admin.call(
        'FUNCTION',
        'LOAD',
        "#!lua name=impostor\nredis.register_function('sliding_allow_v2', function(keys, args) return {1, 0, 99, 0, 0} end)",
      );
      const limiter = limiterWith({ functionName: 'sliding_allow_v2', loadFunctions: 'auto' });
      await expect(limiter.init()).rejects.toThrow(FunctionNameTakenError);
      await expect(limiter.init()).rejects.toThrow(
        /cannot load library rate_limit_v2 on 127\.0\.0\.1:\d+: ERR Function sliding_allow_v2 already exists/,
      );
    });
  });

  describe('a library of the same name with different code', () => {
    it.each(['auto', 'verify'] as const)(
      'loadFunctions %s: FunctionCodeMismatchError, and the loaded library is left alone',
      async (loadFunctions) => {
        await admin.call('FUNCTION', 'LOAD', IMPOSTOR_V2);
        const limiter = limiterWith({ functionName: 'sliding_allow_v2', loadFunctions });

        const error = await rejectionOf(limiter.init());

        expect(error).toBeInstanceOf(FunctionCodeMismatchError);
        expect((error as Error).message).toContain('rate_limit_v2');
        expect((error as Error).message).toContain(address);
        // A consume does not fall through to the foreign code either.
        await expect(limiter.consume('k', { limit: 1, windowMs: 1000 })).rejects.toThrow(FunctionCodeMismatchError);
        expect((await commandStats(admin, 'fcall')).calls).toBe(0);
        const libraries = await listLibraries(admin);
        expect(libraries).toEqual([{ name: 'rate_limit_v2', functions: ['sliding_allow_v2'], code: IMPOSTOR_V2 }]);
      },
    );

    it('a dev server that still holds the development rate_limit_v2 is told so, with the command that replaces it', async () => {
      // The text rate_limit_v2 had before the libraries were consolidated (never released).
      const development = readFileSync(
        join(__dirname, '..', 'fixtures', 'libraries', 'rate_limit_v2.development.lua'),
        'utf8',
      );
      await admin.call('FUNCTION', 'LOAD', development);
      const limiter = limiterWith({ functionName: 'sliding_allow_v2', loadFunctions: 'auto' });

      const error = await rejectionOf(limiter.init());

      expect(error).toBeInstanceOf(FunctionCodeMismatchError);
      expect((error as Error).message).toContain(
        `npx nestjs-sliding-limit functions load rate_limit_v2 --replace --url redis://${address}`,
      );
      // Replaced as the message says, the bundled library decides.
      await admin.call('FUNCTION', 'LOAD', 'REPLACE', BUNDLED.v2);
      await limiter.init();
      expect(await limiter.consume('k', { limit: 1, windowMs: 1000 })).toMatchObject({ allowed: true });
    });
  });

  describe('FUNCTION FLUSH under traffic', () => {
    it.each<[Version, boolean]>([
      ['v1', false],
      ['v2', false],
      ['v2', true],
    ])(
      "%s (batch %s) with 'auto': every consume succeeds (reload + retry), each counted once, and the library is back",
      async (version, batch) => {
        const limiter = limiterWith({ functionName: FUNCTION_OF[version], loadFunctions: 'auto', batch });
        await limiter.init();
        const keys = Array.from({ length: 50 }, (_, i) => `flush:${i}`);
        const report = await flushedUnderTraffic(limiter, keys, () => admin.call('FUNCTION', 'FLUSH'));

        expect(report.failures).toEqual([]);
        expect(report.allowed).toBe(report.succeeded);
        // The flushes really hit calls in flight, and the library was reloaded.
        const fcall = await commandStats(admin, 'fcall');
        expect(fcall.failed).toBeGreaterThan(0);
        expect((await commandStats(admin, 'function|load')).calls).toBeGreaterThanOrEqual(2);
        // A retried call is recorded once: the sorted sets hold one entry per successful call.
        expect(await totalEntries(admin, keys, 'rl:')).toBe(report.succeeded);
        // Every call that succeeded carried one decision, or, batched, several.
        if (batch) expect(fcall.calls - fcall.failed).toBeLessThan(report.succeeded);
        else expect(fcall.calls - fcall.failed).toBe(report.succeeded);
        expect(await listLibraries(admin)).toEqual([
          expect.objectContaining({ name: LIBRARY_OF[version], code: BUNDLED[version] }),
        ]);
      },
    );

    /**
     * A limiter started on the bundled v2, whose functions are then flushed: its next call must
     * reload. Its client follows each of the next `reloadsToFlush` reloads (FUNCTION LOAD) at once
     * with another FUNCTION FLUSH, before the call's retry; each reload takes one from `flushes.left`.
     */
    async function startedThenFlushed(
      reloadsToFlush: number,
    ): Promise<{ limiter: SlidingWindowLimiter; flushes: { left: number } }> {
      const flushes = { left: 0 }; // none during start-up
      const client = connect();
      const call = client.call.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as unknown as { call: typeof call }).call = async (...args) => {
        const reply = await call(...args);
        if (
          String(args[0]).toUpperCase() === 'FUNCTION' &&
          String(args[1]).toUpperCase() === 'LOAD' &&
          flushes.left-- > 0
        ) {
          await admin.call('FUNCTION', 'FLUSH');
        }
        return reply;
      };
      const limiter = testLimiter({
        client,
        keyPrefix: 'rl:',
        functionName: 'sliding_allow_v2',
        onRedisError: 'throw',
        batch: false,
      });
      await admin.call('FUNCTION', 'LOAD', BUNDLED.v2);
      await limiter.init();
      await admin.call('FUNCTION', 'FLUSH');
      flushes.left = reloadsToFlush;
      return { limiter, flushes };
    }

    it('a second flush between the reload and the retry: the call reloads again and succeeds, counted once', async () => {
      const { limiter, flushes } = await startedThenFlushed(1);

      const decision = await limiter.consume('twice', { limit: 5, windowMs: 60_000 });

      expect(decision).toMatchObject({ allowed: true, remaining: 4 });
      expect(flushes.left).toBeLessThan(0); // the flush after the first reload happened
      expect(await admin.zcard('rl:twice')).toBe(1);
      expect(await listLibraries(admin)).toEqual([
        expect.objectContaining({ name: 'rate_limit_v2', code: BUNDLED.v2 }),
      ]);
      limiter.close();
    });

    it('a flush after each of two reloads: the call gives up with FunctionNotLoadedError after two, counted nowhere', async () => {
      const { limiter, flushes } = await startedThenFlushed(2);
      await admin.config('RESETSTAT');

      await expect(limiter.consume('lost', { limit: 5, windowMs: 60_000 })).rejects.toThrow(FunctionNotLoadedError);

      // The runner's limit (MAX_RELOADS in function-runner.ts): two reloads, each followed by a
      // retry, and no third; a third reload would have found the library in place and succeeded.
      expect((await commandStats(admin, 'function|load')).calls).toBe(2);
      expect(await commandStats(admin, 'fcall')).toEqual({ calls: 3, failed: 3 });
      expect(flushes.left).toBe(0);
      expect(await admin.zcard('rl:lost')).toBe(0);
      limiter.close();
    });

    it.each<Version>(['v1', 'v2'])(
      "%s with 'verify': the library verified at start-up is reloaded as bundled (that one only), the call counted once, and a warning says so",
      async (version) => {
        await admin.call('FUNCTION', 'LOAD', BUNDLED[version]);
        const logger = recordingLogger();
        const limiter = limiterWith({ functionName: FUNCTION_OF[version], loadFunctions: 'verify', logger });
        await limiter.init();
        expect((await limiter.consume('k', { limit: 5, windowMs: 60_000 })).allowed).toBe(true);

        await admin.call('FUNCTION', 'FLUSH');
        await admin.del('rl:k');

        expect(await limiter.consume('k', { limit: 5, windowMs: 60_000 })).toMatchObject({
          allowed: true,
          remaining: 4,
          functionName: FUNCTION_OF[version],
        });
        expect(await admin.zcard('rl:k')).toBe(1);
        expect(await listLibraries(admin)).toEqual([
          { name: LIBRARY_OF[version], functions: expect.any(Array), code: BUNDLED[version] },
        ]);
        expect(logger.warnings).toEqual([
          `loadFunctions is 'verify', but ${address} had lost library ${LIBRARY_OF[version]} (a restart without ` +
            `persistence, or FUNCTION FLUSH): reloaded the bundled ${LIBRARY_OF[version]}, the library verified at ` +
            `start-up, so that ${FUNCTION_OF[version]} decides again. Make the server keep its functions (appendonly ` +
            'or RDB persistence, or load them as it starts) and find out why it lost them',
        ]);
        await limiter.close();
      },
    );

    it("with 'verify', a library of that name with other code in place of the lost one is left alone: FunctionCodeMismatchError", async () => {
      await admin.call('FUNCTION', 'LOAD', BUNDLED.v2);
      const limiter = limiterWith({ loadFunctions: 'verify', logger: recordingLogger() });
      await limiter.init();
      await admin.call('FUNCTION', 'FLUSH');
      await admin.call('FUNCTION', 'LOAD', IMPOSTOR_V2.replace('sliding_allow_v2', 'sliding_other_v2'));

      await expect(limiter.consume('k', { limit: 5, windowMs: 1000 })).rejects.toThrow(FunctionCodeMismatchError);
      expect((await listLibraries(admin)).map((library) => library.functions)).toEqual([['sliding_other_v2']]);
    });

    it("with 'auto' the reload is logged at log level, naming the node", async () => {
      const logger = recordingLogger();
      const limiter = limiterWith({ loadFunctions: 'auto', logger });
      await limiter.init();
      await admin.call('FUNCTION', 'FLUSH');

      expect((await limiter.consume('k', { limit: 5, windowMs: 1000 })).allowed).toBe(true);
      expect(logger.logs).toEqual([
        `${address} had lost library rate_limit_v2 (a restart without persistence, or FUNCTION FLUSH); ` +
          "reloaded it (loadFunctions 'auto'), and sliding_allow_v2 decides again",
      ]);
      expect(logger.warnings).toEqual([]);
    });

    it("with 'off' nothing is reloaded: consume fails with FunctionNotLoadedError naming the node and the command with --url", async () => {
      await admin.call('FUNCTION', 'LOAD', BUNDLED.v2);
      const limiter = limiterWith({ loadFunctions: 'off' });
      await limiter.init();
      expect((await limiter.consume('k', { limit: 5, windowMs: 1000 })).allowed).toBe(true);

      await admin.call('FUNCTION', 'FLUSH');

      const error = await rejectionOf(limiter.consume('k', { limit: 5, windowMs: 1000 }));
      expect(error).toBeInstanceOf(FunctionNotLoadedError);
      expect((error as FunctionNotLoadedError).nodes).toEqual([address]);
      expect((error as Error).message).toContain(
        `load it with: npx nestjs-sliding-limit functions load v2 --url redis://${address} (or redis-cli`,
      );
      expect(await listLibraries(admin)).toEqual([]);
    });
  });

  describe('the retry after a lost function or script is the same request', () => {
    /** Records what the server executes, up to a sentinel command sent after the action. */
    async function monitorDuring(action: () => Promise<unknown>): Promise<string[][]> {
      // The limiter's override subscription first: ioredis takes a command seen in the chunk that
      // carries MONITOR's reply for a reply of its own ("Command queue state error").
      await waitFor(
        () => admin.pubsub('NUMSUB', OVERRIDE_CHANGES_CHANNEL),
        (reply) => Number((reply as unknown[])[1]) > 0,
      );
      const monitor = await admin.monitor();
      const seen: string[][] = [];
      const sentinel = `sentinel-${process.pid}-${Date.now()}`;
      const done = new Promise<void>((resolve) =>
        monitor.on('monitor', (_time: string, args: string[]) => {
          if (args[0].toLowerCase() === 'echo' && args[1] === sentinel) resolve();
          else seen.push(args);
        }),
      );
      try {
        await action();
        await admin.echo(sentinel);
        await done;
      } finally {
        monitor.disconnect();
      }
      return seen;
    }

    it.each<Version>(['v1', 'v2'])(
      '%s function mode: after FUNCTION FLUSH one consume sends the same FCALL twice (same member) and adds one entry',
      async (version) => {
        const limiter = limiterWith({ functionName: FUNCTION_OF[version], loadFunctions: 'auto' });
        await limiter.init();
        await admin.call('FUNCTION', 'FLUSH');

        const commands = await monitorDuring(() => limiter.consume('once', { limit: 10, windowMs: 60_000 }));

        const fcalls = commands.filter((args) => args[0].toLowerCase() === 'fcall');
        expect(fcalls).toHaveLength(2);
        expect(fcalls[1]).toEqual(fcalls[0]);
        const names = commands.map((args) => args.slice(0, 2).join(' ').toLowerCase());
        const loadAt = names.indexOf('function load');
        expect(loadAt).toBeGreaterThan(names.indexOf('fcall ' + FUNCTION_OF[version]));
        expect(names.lastIndexOf('fcall ' + FUNCTION_OF[version])).toBeGreaterThan(loadAt);
        // The one entry is the member both attempts carried.
        expect(await admin.zrange('rl:once', '0', '-1')).toEqual([memberOf(version, fcalls[0])]);
      },
    );

    it.each<Version>(['v1', 'v2'])(
      '%s script mode: after SCRIPT FLUSH the EVAL fallback carries the EVALSHA arguments and adds one entry',
      async (version) => {
        const limiter = limiterWith({ functionName: FUNCTION_OF[version], mode: 'script', loadFunctions: 'auto' });
        await limiter.init();
        await admin.script('FLUSH');

        const commands = await monitorDuring(() => limiter.consume('once', { limit: 10, windowMs: 60_000 }));

        const evalsha = commands.filter((args) => args[0].toLowerCase() === 'evalsha');
        const evals = commands.filter((args) => args[0].toLowerCase() === 'eval');
        expect(evalsha).toHaveLength(1);
        expect(evals).toHaveLength(1);
        expect(evals[0].slice(2)).toEqual(evalsha[0].slice(2));
        expect(await admin.zrange('rl:once', '0', '-1')).toEqual([memberOf(version, evalsha[0])]);
      },
    );

    /** The member argument of a monitored FCALL/EVALSHA: [cmd, fn|sha, numkeys, ...keys, ...argv]. */
    function memberOf(version: Version, args: string[]): string {
      const argv = args.slice(3 + Number(args[2]));
      return version === 'v1' ? argv[3] : argv[1];
    }
  });

  describe('Redis restarted empty on the same address', () => {
    let restarted: RedisServer | undefined;
    let first: RedisServer | undefined;
    let client: Redis | undefined;
    afterEach(async () => {
      client?.disconnect();
      client = undefined;
      await restarted?.stop();
      await first?.stop();
      restarted = first = undefined;
    });

    it('the limiter reloads the library and carries on; only calls made while the server is down are degraded', async () => {
      first = await startRedisServer();
      const port = first.port;
      // A client that reconnects quickly; the limiter itself fails fast while it is disconnected.
      client = new Redis(first.url, { retryStrategy: () => 50 });
      client.on('error', () => undefined);
      // The default timeout: it bounds how long calls stay degraded once the server is back.
      const limiter = new SlidingWindowLimiter({
        client,
        keyPrefix: 'rl:',
        functionName: 'sliding_allow_v2',
        loadFunctions: 'auto',
        logger: silentLogger(),
        report: false,
      });
      await limiter.init();
      const keys = Array.from({ length: 10 }, (_, i) => `restart:${i}`);
      const traffic = startTraffic(limiter, keys, { concurrency: 4, pauseMs: 2 });

      await traffic.moreCalls(20);
      const stoppedAt = Date.now();
      await first.stop();
      await sleep(300); // the outage
      restarted = await startRedisServerOnPort(port);
      const restartedAt = Date.now();
      // Until Redis has decided 20 calls started after the bound below.
      await traffic.moreCalls(20, {
        which: (call) => call.degraded === undefined && call.startedAt > restartedAt + DEGRADED_AFTER_RESTART_MS,
      });
      const calls = await traffic.stop();
      expect(calls.filter((call) => call.error !== undefined)).toEqual([]);
      const degraded = calls.filter((call) => call.degraded !== undefined).map((call) => call.endedAt);
      const redisDecided = calls.filter((call) => call.degraded === undefined);

      expect(redisDecided.filter((d) => d.endedAt < stoppedAt).length).toBeGreaterThan(0);
      expect(degraded.length).toBeGreaterThan(0);
      // Degraded only while the server was down, plus the client's reconnect delay and one call's attempts.
      expect(Math.min(...degraded)).toBeGreaterThanOrEqual(stoppedAt);
      const degradedSeconds = (Math.max(...degraded) - Math.min(...degraded)) / 1000;
      expect(Math.max(...degraded)).toBeLessThan(restartedAt + DEGRADED_AFTER_RESTART_MS);
      process.stdout.write(
        `Redis restarted empty: ${degradedSeconds.toFixed(2)} s of degraded decisions for ${((restartedAt - stoppedAt) / 1000).toFixed(2)} s of downtime\n`,
      );
      // Redis decides again, on a server that got the library back.
      const check = new Redis(restarted.url);
      try {
        expect(await listLibraries(check)).toEqual([
          expect.objectContaining({ name: 'rate_limit_v2', code: BUNDLED.v2 }),
        ]);
        // One entry per call Redis decided on the new server: at least those started after the restart,
        // at most those that ended after the old server was stopped, plus calls in flight at the stop
        // that ioredis re-sent after reconnecting (autoResendUnfulfilledCommands) although the limiter
        // had already decided them by its policy: such an entry can only make it stricter, never looser.
        const entries = await totalEntries(check, keys, 'rl:');
        expect(entries).toBeGreaterThanOrEqual(redisDecided.filter((d) => d.startedAt > restartedAt).length);
        expect(entries).toBeLessThanOrEqual(redisDecided.filter((d) => d.endedAt > stoppedAt).length + degraded.length);
      } finally {
        await check.quit();
      }
      expect(limiter.metrics.snapshot()[0].fallbacks?.allow).toBe(degraded.length);
    });
  });

  describe("mode: 'script'", () => {
    it.each<Version>(['v1', 'v2'])(
      '%s: consume and peek work through EVALSHA, and no function is loaded',
      async (version) => {
        const limiter = limiterWith({ functionName: FUNCTION_OF[version], mode: 'script' });
        await limiter.init();
        expect(limiter.mode).toBe('script');

        expect(await limiter.consume('s', { limit: 2, windowMs: 60_000 })).toMatchObject({
          allowed: true,
          remaining: 1,
        });
        expect(await limiter.consume('s', { limit: 2, windowMs: 60_000 })).toMatchObject({
          allowed: true,
          remaining: 0,
        });
        expect(await limiter.consume('s', { limit: 2, windowMs: 60_000 })).toMatchObject({
          allowed: false,
          remaining: 0,
        });
        expect(await limiter.peek('s', { limit: 2, windowMs: 60_000 })).toMatchObject({ allowed: false, count: 2 });
        expect(await admin.zcard('rl:s')).toBe(2);
        expect(await listLibraries(admin)).toEqual([]);
        expect((await commandStats(admin, 'evalsha')).calls).toBeGreaterThan(0);
      },
    );

    it("loadFunctions 'verify' with the scripts missing from the cache: FunctionNotLoadedError naming the node", async () => {
      const limiter = limiterWith({ mode: 'script', loadFunctions: 'verify' });
      const error = await rejectionOf(limiter.init());
      expect(error).toBeInstanceOf(FunctionNotLoadedError);
      expect((error as Error).message).toContain(address);
    });

    it.each<Version>(['v1', 'v2'])(
      '%s: SCRIPT FLUSH under traffic: every call succeeds through the NOSCRIPT fallback, each counted once',
      async (version) => {
        const limiter = limiterWith({ functionName: FUNCTION_OF[version], mode: 'script', loadFunctions: 'auto' });
        await limiter.init();
        const keys = Array.from({ length: 50 }, (_, i) => `sflush:${i}`);
        const report = await flushedUnderTraffic(limiter, keys, () => admin.script('FLUSH'));

        expect(report.failures).toEqual([]);
        expect(report.allowed).toBe(report.succeeded);
        expect((await commandStats(admin, 'evalsha')).failed).toBeGreaterThan(0);
        expect((await commandStats(admin, 'eval')).calls).toBeGreaterThan(0);
        expect(await totalEntries(admin, keys, 'rl:')).toBe(report.succeeded);
      },
    );
  });
});

/** A logger that keeps degraded-mode messages out of the test output. */
function silentLogger() {
  return { log: () => undefined, warn: () => undefined };
}
