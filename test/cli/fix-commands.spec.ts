import Redis from 'ioredis';
import { FunctionCodeMismatchError, FunctionNotLoadedError, type SlidingWindowLimiterOptions } from '../../lib';
import { InstanceReporter } from '../../lib/limiter/instance-reporter';
import { readLibrarySource } from '../../lib/redis/lua-library';
import { useOwnRedisServer } from '../support/own-redis';
import { rejectionOf } from '../support/rejection';
import { useTestLimiters } from '../support/test-limiter';
import { runCli } from './run-cli';

/*
 * Every command the package prints for an operator to run names the server it is meant for: run as
 * printed, it must not load a library into whatever REDIS_URL or 127.0.0.1:6379 happens to be. A
 * password never appears in it (a placeholder stands in).
 */
const PASSWORD = 'fix-cmd-s3cret';

describe('fix commands name their server', () => {
  const own = useOwnRedisServer();
  let admin: Redis;
  let address: string;
  /** The server's URL with the password: how the application connects. */
  let secretUrl: string;
  /** The same URL as a message may show it. */
  let shownUrl: string;

  beforeAll(async () => {
    address = `127.0.0.1:${own.server().port}`;
    secretUrl = `redis://:${PASSWORD}@${address}`;
    shownUrl = `redis://:***@${address}`;
    // Set once started: the server helper checks readiness with a PING that needs no password.
    await own.connect().config('SET', 'requirepass', PASSWORD);
    admin = own.connect(() => new Redis(secretUrl));
  });
  beforeEach(async () => {
    await admin.flushall();
    await admin.function('FLUSH');
  });
  const limiters = useTestLimiters(() => ({ functionName: 'sliding_allow_v2' }));
  /** A limiter on a connection of its own, with the password: as the application connects. */
  const limiter = (options: SlidingWindowLimiterOptions) =>
    limiters({ client: own.connect(() => new Redis(secretUrl)), ...options });

  it("FunctionNotLoadedError at start-up (loadFunctions 'verify'): functions load with --url, and redis-cli -u", async () => {
    const error = await rejectionOf(limiter({ loadFunctions: 'verify' }).init());
    expect(error).toBeInstanceOf(FunctionNotLoadedError);
    const { message } = error as Error;
    expect(message).toContain(`npx nestjs-sliding-limit functions load v2 --url ${shownUrl}`);
    expect(message).toContain(`redis-cli -u ${shownUrl} -x FUNCTION LOAD < node_modules/`);
    expect(message).not.toContain(PASSWORD);
  });

  it("FunctionNotLoadedError on a call (loadFunctions 'off'): the same command", async () => {
    const error = await rejectionOf(
      limiter({ loadFunctions: 'off', onRedisError: 'throw' }).consume('k', { limit: 1, windowMs: 1000 }),
    );
    expect(error).toBeInstanceOf(FunctionNotLoadedError);
    expect((error as Error).message).toContain(`npx nestjs-sliding-limit functions load v2 --url ${shownUrl}`);
    expect((error as Error).message).not.toContain(PASSWORD);
  });

  it('FunctionCodeMismatchError: the list and replace commands with --url', async () => {
    await admin.call('FUNCTION', 'LOAD', `${readLibrarySource('rate_limit_v2.lua')}\n-- edited\n`);
    const error = await rejectionOf(limiter({ loadFunctions: 'verify' }).init());
    expect(error).toBeInstanceOf(FunctionCodeMismatchError);
    const { message } = error as Error;
    expect(message).toContain(`npx nestjs-sliding-limit functions list --url ${shownUrl}`);
    expect(message).toContain(`npx nestjs-sliding-limit functions load rate_limit_v2 --replace --url ${shownUrl}`);
    expect(message).not.toContain(PASSWORD);
  });

  it('the CLI connected through REDIS_URL names that server too, without the password', async () => {
    const reporting = limiter({});
    await reporting.consume('k', { limit: 5, windowMs: 60_000 });
    // Written once, never started: nothing to stop afterwards.
    await new InstanceReporter({ limiter: reporting, client: admin, instanceId: 'web-1' }).reportNow();
    await admin.function('FLUSH');

    for (const command of [
      ['functions', 'list'],
      ['doctor', '--key-prefix', 'none:'],
    ]) {
      const run = await runCli(command, { REDIS_URL: secretUrl });
      expect(`${command.join(' ')}: ${run.stdout}`).toContain(
        `npx nestjs-sliding-limit functions load v2 --url ${shownUrl}`,
      );
      expect(run.stdout + run.stderr).not.toContain(PASSWORD);
    }
  });
});
