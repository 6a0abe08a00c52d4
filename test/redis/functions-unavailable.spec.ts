/*
 * A server that cannot run Redis Functions although its version has them: FUNCTION renamed or
 * disabled in its configuration (`rename-command FUNCTION ""`, as hardened configs and some managed
 * services have it), or — Valkey 9.1 and later — Lua shipped as a module that is not loaded. Start-up
 * must fail with an error naming the node, the server, the cause and the fixes, not with a bare
 * "unknown command". Each test starts a server of its own with the commands renamed.
 */
import Redis from 'ioredis';
import { FunctionsUnavailableError, type SlidingWindowLimiterOptions } from '../../lib';
import { functionsUnavailableOn } from '../../lib/redis/function-support';
import { useOwnRedisServer } from '../support/own-redis';
import { rejectionOf } from '../support/rejection';
import { testLimiter } from '../support/test-limiter';
import { testServerIdentity } from '../support/test-server';

const silent = { log: () => undefined, warn: () => undefined };

describe('a server without the FUNCTION command', () => {
  describe('EVAL still works', () => {
    const own = useOwnRedisServer(['--rename-command', 'FUNCTION', '']);
    const limiterWith = (options: SlidingWindowLimiterOptions = {}) =>
      testLimiter({ client: own.connect(), logger: silent, ...options });

    it.each(['auto', 'verify'] as const)(
      "loadFunctions '%s': init() fails with FunctionsUnavailableError naming the node, the server, the cause and both fixes",
      async (loadFunctions) => {
        const address = `127.0.0.1:${own.server().port}`;
        const { name, version } = testServerIdentity();

        const error = await rejectionOf(limiterWith({ loadFunctions }).init());

        expect(error).toBeInstanceOf(FunctionsUnavailableError);
        expect(error).toMatchObject({
          node: address,
          server: { name, version },
          missing: 'function-command',
          scriptsWork: true,
        });
        const { message } = error as Error;
        expect(message).toMatch(
          new RegExp(
            `^the server at ${address.replace(/\./g, '\\.')} \\(${name} ${version}\\) has no FUNCTION command`,
          ),
        );
        expect(message).toMatch(/has no FUNCTION command \(ERR unknown command .function.\): /i);
        expect(message).toContain('rename-command FUNCTION');
        expect(message).toContain('Lua is a module the server did not load');
        expect(message).toContain("EVAL works there: or set mode: 'script'");
      },
    );

    it("mode 'function' fails the same way; mode 'script', the suggested fix, decides there", async () => {
      await expect(limiterWith({ mode: 'function' }).init()).rejects.toThrow(FunctionsUnavailableError);

      const limiter = limiterWith({ mode: 'script', keyPrefix: 'script-fix:' });
      await limiter.init();
      expect(limiter.mode).toBe('script');
      expect(await limiter.consume('k', { limit: 1, windowMs: 60_000 })).toMatchObject({ allowed: true });
      expect(await limiter.consume('k', { limit: 1, windowMs: 60_000 })).toMatchObject({ allowed: false });
    });

    it('FUNCTION STATS, asked without a failure to read, tells the same', async () => {
      const client = own.connect();
      await client.ping();
      expect(await functionsUnavailableOn(client)).toMatchObject({ missing: 'function-command', scriptsWork: true });
    });
  });

  describe('EVAL renamed too', () => {
    const own = useOwnRedisServer(['--rename-command', 'FUNCTION', '', '--rename-command', 'EVAL', '']);

    it("says that mode: 'script' cannot help until the server runs Lua", async () => {
      const limiter = testLimiter({ client: own.connect(), logger: silent });

      const error = await rejectionOf(limiter.init());

      expect(error).toBeInstanceOf(FunctionsUnavailableError);
      expect(error).toMatchObject({ missing: 'function-command', scriptsWork: false });
      expect((error as Error).message).toMatch(
        /EVAL fails there too \(ERR unknown command .eval.\): mode: 'script' cannot help until the server runs Lua$/i,
      );
    });
  });

  describe('a server that has functions', () => {
    const own = useOwnRedisServer();

    it('is not reported', async () => {
      const client: Redis = own.connect();
      await client.ping();
      expect(await functionsUnavailableOn(client)).toBeUndefined();
      expect(await functionsUnavailableOn(client, new Error('ERR Function not found'))).toBeUndefined();
    });
  });
});
