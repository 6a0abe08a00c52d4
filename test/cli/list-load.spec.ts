import Redis from 'ioredis';
import { InstanceReporter } from '../../lib/limiter/instance-reporter';
import { readLibrarySource } from '../../lib/redis/lua-library';
import { useOwnRedisServer } from '../support/own-redis';
import { listLibraries, type LibraryInfo } from '../support/redis-inspect';
import type { RedisServer } from '../support/redis-server';
import { testLimiter } from '../support/test-limiter';
import { testServerIdentity } from '../support/test-server';
import { runCli } from './run-cli';

/** FUNCTION LIST WITHCODE of a node, by library name; read by the test's own parser, not the CLI's. */
async function libraries(redis: Redis): Promise<Record<string, LibraryInfo>> {
  return Object.fromEntries((await listLibraries(redis)).map((library) => [library.name, library]));
}

const V1 = readLibrarySource('rate_limit_v1.lua');
const V2 = readLibrarySource('rate_limit_v2.lua');
const PATCHED_V1 = `${V1}\n-- patched by hand\n`;

describe('functions list and load (standalone)', () => {
  const own = useOwnRedisServer();
  let server: RedisServer;
  let redis: Redis;
  let url: string;
  beforeAll(() => {
    server = own.server();
    redis = own.connect();
    url = server.url;
  });
  beforeEach(() => redis.function('FLUSH'));

  it('lists an empty server as OK, naming the server and its version', async () => {
    const { name, version } = testServerIdentity();
    const run = await runCli(['functions', 'list', '--url', url]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`127.0.0.1:${server.port} (${name} ${version})\n  (no libraries)`);
    expect(run.stdout).toMatch(/OK: 1 master checked/);
    expect(run.stderr).toBe('');
    const json = await runCli(['functions', 'list', '--url', url, '--json']);
    expect(json.json()).toMatchObject({ servers: [{ node: `127.0.0.1:${server.port}`, name, version }] });
  });

  it('loads a bundled version by v-name, library name or function name, without REPLACE, and lists it', async () => {
    const first = await runCli(['functions', 'load', 'v1', '--url', url]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`127\\.0\\.0\\.1:${server.port}\\s+loaded`));
    expect((await libraries(redis)).rate_limit_v1.code).toBe(V1);

    const again = await runCli(['functions', 'load', 'rate_limit_v1', '--url', url, '--json']);
    expect(again.code).toBe(0);
    expect(again.json()).toEqual({
      ok: true,
      command: 'functions load',
      exitCode: 0,
      servers: [{ node: `127.0.0.1:${server.port}`, ...testServerIdentity() }],
      version: 'v1',
      library: 'rate_limit_v1',
      replace: false,
      nodes: [{ node: `127.0.0.1:${server.port}`, result: 'unchanged' }],
    });

    expect((await runCli(['functions', 'load', 'sliding_allow_v2', '--url', url])).code).toBe(0);
    const listed = await runCli(['functions', 'list', '--url', url, '--json']);
    expect(listed.code).toBe(0);
    expect(listed.json()).toEqual({
      ok: true,
      command: 'functions list',
      exitCode: 0,
      servers: [{ node: `127.0.0.1:${server.port}`, ...testServerIdentity() }],
      nodes: [
        {
          node: `127.0.0.1:${server.port}`,
          libraries: [
            { library: 'rate_limit_v1', version: 'v1', functions: ['sliding_allow_v1'], matchesBundled: true },
            {
              library: 'rate_limit_v2',
              version: 'v2',
              functions: ['sliding_allow_many_v2', 'sliding_allow_v2', 'sliding_peek_v2'],
              matchesBundled: true,
            },
          ],
        },
      ],
      called: [],
      problems: [],
    });
    const text = await runCli(['functions', 'list', '--url', url]);
    expect(text.stdout).toMatch(/rate_limit_v1\s+v1\s+sliding_allow_v1\n/);
    expect(text.stdout).toMatch(/rate_limit_v2\s+v2\s+sliding_allow_many_v2, sliding_allow_v2, sliding_peek_v2\n/);
  });

  it('leaves a library with other code alone unless --replace, and list flags it', async () => {
    await redis.call('FUNCTION', 'LOAD', PATCHED_V1);
    await redis.call('FUNCTION', 'LOAD', V2);

    const list = await runCli(['functions', 'list', '--url', url, '--json']);
    expect(list.code).toBe(1);
    const { problems, ok, error } = list.json<{
      ok: boolean;
      problems: { kind: string; node: string; library: string; message: string }[];
      error: { kind: string };
    }>();
    expect(ok).toBe(false);
    expect(error.kind).toBe('failed');
    expect(problems).toEqual([
      {
        kind: 'differs-from-bundled',
        node: `127.0.0.1:${server.port}`,
        library: 'rate_limit_v1',
        message: expect.stringContaining(`npx nestjs-sliding-limit functions load v1 --replace --url ${url}`),
      },
    ]);
    expect(list.stderr).toMatch(/^error: 1 problem found/);
    expect((await runCli(['functions', 'list', '--url', url])).stdout).toMatch(
      /rate_limit_v1\s+v1\s+sliding_allow_v1\s+\(not the bundled code\)/,
    );

    const refused = await runCli(['functions', 'load', 'v1', '--url', url]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/different/);
    expect(refused.stdout).toContain('has other code than the bundled v1; nothing was changed there');
    expect(refused.stderr).toMatch(/^error: rate_limit_v1 is not loaded with the bundled code on every master/);
    expect((await libraries(redis)).rate_limit_v1.code).toBe(PATCHED_V1);

    const replaced = await runCli(['functions', 'load', 'v1', '--replace', '--url', url, '--json']);
    expect(replaced.code).toBe(0);
    expect(replaced.json<{ nodes: unknown[] }>().nodes).toEqual([
      { node: `127.0.0.1:${server.port}`, result: 'replaced' },
    ]);
    expect((await libraries(redis)).rate_limit_v1.code).toBe(V1);
    expect((await runCli(['functions', 'list', '--url', url])).code).toBe(0);
  });

  it('reports a node that refuses the load (a function name taken by another library)', async () => {
    await redis.call('FUNCTION', 'LOAD', V2.replace('#!lua name=rate_limit_v2', '#!lua name=impostor'));
    const run = await runCli(['functions', 'load', 'v2', '--url', url, '--json']);
    expect(run.code).toBe(1);
    expect(run.json<{ nodes: unknown[] }>().nodes).toEqual([
      { node: `127.0.0.1:${server.port}`, result: 'failed', error: expect.stringMatching(/already exists/) },
    ]);
    expect(await libraries(redis)).not.toHaveProperty('rate_limit_v2');
  });

  describe('with live instances', () => {
    const reporters: InstanceReporter[] = [];
    afterEach(async () => {
      for (const reporter of reporters.splice(0)) await reporter.close();
    });

    /** A limiter on `functionName` that has decided once (loading its library), and its report written. */
    async function liveInstance(instanceId: string, functionName: string): Promise<void> {
      const limiter = testLimiter({ client: redis, keyPrefix: 'list:', functionName });
      await limiter.consume('k', { limit: 5, windowMs: 60_000 });
      const reporter = new InstanceReporter({ limiter, client: redis, instanceId, intervalMs: 60_000 });
      reporters.push(reporter);
      await reporter.reportNow();
    }

    it('fails after FUNCTION FLUSH while an instance calls a version: naming the library, the instance and the fix', async () => {
      await liveInstance('web-1', 'sliding_allow_v2');
      const before = await runCli(['functions', 'list', '--url', url]);
      expect(before.code).toBe(0);
      expect(before.stdout).toContain('Called by live instances: sliding_allow_v2 (v2: web-1)');

      await redis.function('FLUSH');
      const run = await runCli(['functions', 'list', '--url', url]);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain(
        `rate_limit_v2 (v2) is not loaded on 127.0.0.1:${server.port}, and live instances call sliding_allow_v2: ` +
          `web-1 (prefix list:); run: npx nestjs-sliding-limit functions load v2 --url ${url}`,
      );
      expect(run.stderr).toMatch(/^error: 1 problem found/);

      const json = await runCli(['functions', 'list', '--url', url, '--json']);
      expect(json.json<{ problems: unknown[] }>().problems).toEqual([
        {
          kind: 'called-missing',
          node: `127.0.0.1:${server.port}`,
          library: 'rate_limit_v2',
          instances: ['web-1'],
          message: expect.stringContaining('live instances call sliding_allow_v2'),
        },
      ]);

      expect((await runCli(['functions', 'load', 'v2', '--url', url])).code).toBe(0);
      expect((await runCli(['functions', 'list', '--url', url])).code).toBe(0);
    });

    it('fails when an instance calls a function no library on the master registers', async () => {
      await liveInstance('old-1', 'sliding_allow_v1');
      const reporter = reporters[0];
      // A report naming a function of a later package version, which this CLI does not ship.
      const report = JSON.parse((await redis.get(reporter.key)) as string) as Record<string, unknown>;
      await redis.set(reporter.key, JSON.stringify({ ...report, functionName: 'sliding_allow_v99' }), 'PX', 60_000);
      const run = await runCli(['functions', 'list', '--url', url, '--json']);
      expect(run.code).toBe(1);
      expect(run.json<{ problems: unknown[] }>().problems).toEqual([
        expect.objectContaining({ kind: 'called-missing', library: null, instances: ['old-1'] }),
      ]);
      expect(run.json<{ problems: { message: string }[] }>().problems[0].message).toContain('no library on 127.0.0.1');
    });
  });

  it('rejects an unknown version before connecting (exit 2, even with an unreachable Redis)', async () => {
    const run = await runCli(['functions', 'load', 'v9', '--url', 'redis://127.0.0.1:1']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      '"v9" is not a version this package ships; known: v1 (rate_limit_v1), v2 (rate_limit_v2)',
    );
    expect(run.stdout).toBe('');
  });
});
