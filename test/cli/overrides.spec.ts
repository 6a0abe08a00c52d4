import { hostname, userInfo } from 'node:os';
import Redis, { Cluster } from 'ioredis';
import calculateSlot from 'cluster-key-slot';
import type { SlidingWindowLimiter, StoredOverride } from '../../lib';
import { InstanceReporter } from '../../lib/limiter/instance-reporter';
import { librarySource } from '../support/lua-functions';
import { useRedisCluster } from '../support/redis-cluster';
import { useOwnRedisServer } from '../support/own-redis';
import { sleep } from '../support/sleep';
import { testLimiter, useTestLimiters } from '../support/test-limiter';
import { runCli } from './run-cli';

const MIN = 60_000;
const rule = { limit: 2, windowMs: MIN };

/** The `--json` document of `overrides set`. */
interface SetJson {
  ok: boolean;
  command: string;
  keyPrefix: string;
  redisKey: string;
  override: StoredOverride;
  warnings: string[];
}

/*
 * `nestjs-sliding-limit overrides …` end to end: what the CLI stores, a running limiter obeys on its
 * next decision; get and list show it; delete gives the key its rule back.
 */
describe('overrides commands (standalone)', () => {
  const own = useOwnRedisServer();
  let redis: Redis;
  let url: string;
  beforeAll(() => {
    redis = own.connect();
    url = own.server().url;
  });
  own.emptyBeforeEach();
  const limiters = useTestLimiters();

  /** A limiter of the application (v2, loaded at start-up), on a connection of its own. */
  const appLimiter = async (keyPrefix = 'rl:', functionName?: string) => {
    const limiter = limiters({ client: own.connect(), keyPrefix, ...(functionName ? { functionName } : {}) });
    await limiter.init();
    return limiter;
  };
  const overrides = (...args: string[]) => runCli(['overrides', ...args, '--url', url]);

  it('set → the next decision obeys; get and list show it; delete → the rule again', async () => {
    const limiter = await appLimiter();
    await limiter.consume('login:{ip:10.0.0.1}', rule);

    const set = await overrides(
      'set',
      'login:{ip:10.0.0.1}',
      '--limit',
      '5',
      '--ttl',
      '1h',
      '--note',
      'partner load test',
      '--by',
      'ops@example',
      '--json',
    );
    expect(set.code).toBe(0);
    expect(set.stderr).toBe('');
    const document = set.json<SetJson>();
    expect(document).toMatchObject({
      ok: true,
      command: 'overrides set',
      keyPrefix: 'rl:',
      redisKey: 'rl:login:{ip:10.0.0.1}|override',
      warnings: [],
      override: {
        key: 'login:{ip:10.0.0.1}',
        override: { action: 'limit', limit: 5 },
        note: 'partner load test',
        by: 'ops@example',
      },
    });
    expect(document.override.expiresInMs).toBeGreaterThan(3_590_000);
    expect(document.override.expiresInMs).toBeLessThanOrEqual(3_600_000);
    expect(await redis.pttl('rl:login:{ip:10.0.0.1}|override')).toBeGreaterThan(3_590_000);

    const raised = await limiter.consume('login:{ip:10.0.0.1}', rule);
    expect([raised.allowed, raised.limit, raised.remaining, raised.override]).toEqual([true, 5, 3, 'limit']);

    const get = await overrides('get', 'login:{ip:10.0.0.1}');
    expect(get.code).toBe(0);
    expect(get.stdout).toMatch(/^ {2}key +action +limit +expires in +note +by\n/);
    expect(get.stdout).toMatch(/ {2}login:\{ip:10\.0\.0\.1\} +limit +5 +59m \d+s +partner load test +ops@example\n$/);
    const getJson = await overrides('get', 'login:{ip:10.0.0.1}', '--json');
    expect(getJson.json()).toMatchObject({
      key: 'login:{ip:10.0.0.1}',
      override: { ...document.override, expiresInMs: expect.any(Number) },
    });

    await overrides('set', 'global', '--exempt');
    const list = await overrides('list', '--json');
    expect(list.code).toBe(0);
    expect(list.json<{ overrides: StoredOverride[]; truncated: boolean }>()).toMatchObject({
      truncated: false,
      overrides: [
        { key: 'global', override: { action: 'exempt' } },
        { key: 'login:{ip:10.0.0.1}', override: { action: 'limit', limit: 5 } },
      ],
    });
    const text = await overrides('list', '--match', 'login:*');
    expect(text.stdout).toMatch(/^1 override under key prefix "rl:" matching "login:\*":\n/);
    expect(text.stdout).not.toContain('global');
    expect((await overrides('list')).stdout).toMatch(
      /^2 overrides under key prefix "rl:":\n.*\n {2}global +exempt +- +never +- +\S+@/,
    );

    const deleted = await overrides('delete', 'login:{ip:10.0.0.1}', '--json');
    expect(deleted.json()).toMatchObject({ ok: true, deleted: true });
    const again = await overrides('delete', 'login:{ip:10.0.0.1}');
    expect([again.code, again.stdout]).toEqual([
      0,
      'No override of login:{ip:10.0.0.1} under key prefix "rl:": nothing to delete.\n',
    ]);
    const plain = await limiter.consume('login:{ip:10.0.0.1}', rule);
    expect([plain.allowed, plain.limit, plain.override]).toEqual([false, 2, undefined]);
    const none = await overrides('get', 'login:{ip:10.0.0.1}', '--json');
    expect([none.code, none.json().override]).toEqual([0, null]);
  });

  it('blocks with a Retry-After of the block’s time left, exempts, and says who set it', async () => {
    const limiter = await appLimiter('api:');
    const block = await overrides('set', 'user:{42}', '--block', '--ttl', '15m', '--key-prefix', 'api:', '--json');
    expect(block.json<SetJson>().override).toMatchObject({
      override: { action: 'block' },
      by: `${userInfo().username}@${hostname()}`,
    });
    const blocked = await limiter.consume('user:{42}', rule);
    expect([blocked.allowed, blocked.limit, blocked.override]).toEqual([false, 0, 'block']);
    expect(blocked.retryAfterMs).toBeGreaterThan(14 * MIN);
    expect(blocked.retryAfterMs).toBeLessThanOrEqual(15 * MIN);

    const exempt = await overrides('set', 'user:{42}', '--exempt', '--key-prefix', 'api:', '--note', 'vip');
    expect(exempt.code).toBe(0);
    expect(exempt.stdout).toMatch(
      /^Set the override of user:\{42\} under key prefix "api:" \(Redis key api:user:\{42\}\|override\):\n/,
    );
    expect(exempt.stdout).toMatch(/user:\{42\} +exempt +- +never +vip +\S+@\S+\n$/);
    for (let i = 0; i < 4; i++) expect((await limiter.consume('user:{42}', rule)).override).toBe('exempt');
    // Another prefix's key of the same name has no override.
    expect((await overrides('get', 'user:{42}', '--json')).json().override).toBeNull();
  });

  it('reports a hash that is no override (an operator’s edit) with how to fix it, and deletes it', async () => {
    await redis.hset('rl:bad:{1}|override', 'action', 'slower');
    const get = await overrides('get', 'bad:{1}');
    expect(get.code).toBe(1);
    expect(get.stderr).toMatch(
      /^error: unexpected failure: .*HGETALL rl:bad:\{1\}\|override \(no valid override: delete it\)/,
    );
    expect((await overrides('delete', 'bad:{1}', '--json')).json().deleted).toBe(true);
    expect(await redis.exists('rl:bad:{1}|override')).toBe(0);
  });

  it.each([
    ['250ms', 250, '2\\d\\dms'],
    ['30s', 30_000, '(30|29)s'],
    ['7d', 7 * 24 * 60 * MIN, '(7d|6d 23h)'],
  ])('reads --ttl %s as %d ms, and shows the time left', async (ttl, ms, shown) => {
    const set = await overrides('set', 'ttl:{1}', '--block', '--ttl', ttl, '--json');
    expect(set.json<SetJson>().override.expiresInMs).toBeGreaterThan(ms * 0.9);
    expect(set.json<SetJson>().override.expiresInMs).toBeLessThanOrEqual(ms);
    const text = await overrides('set', 'ttl:{1}', '--block', '--ttl', ttl);
    expect(text.stdout).toMatch(new RegExp(` {2}ttl:\\{1\\} +block +- +${shown} +- +\\S+@`));
  });

  it('says so when no override is under the key prefix', async () => {
    expect((await overrides('list')).stdout).toBe('No overrides under key prefix "rl:".\n');
  });

  it('lets an override expire by itself', async () => {
    const limiter = await appLimiter();
    // A second: the override outlives the next call, however late a loaded host makes it.
    expect((await overrides('set', 'k:{1}', '--block', '--ttl', '1000')).code).toBe(0);
    expect((await limiter.consume('k:{1}', rule)).allowed).toBe(false);
    await sleep(1100);
    expect((await overrides('get', 'k:{1}')).stdout).toBe(
      'No override of k:{1} under key prefix "rl:": its rules apply.\n',
    );
    expect((await limiter.consume('k:{1}', rule)).allowed).toBe(true);
  });

  it('warns, and stores anyway, when no master holds v2 or a live limiter calls a version without overrides', async () => {
    const set = await overrides('set', 'a:{1}', '--limit', '1', '--json');
    expect(set.code).toBe(0);
    // --json carries them in the document, and stderr says them as well.
    expect(set.stderr).toMatch(/^warning: /m);
    expect(set.json<SetJson>().warnings).toEqual([
      expect.stringMatching(
        /^127\.0\.0\.1:\d+ has no rate_limit_v2: the override is stored, but only sliding_allow_v2 reads overrides; .*run: npx nestjs-sliding-limit functions load v2 --url redis:\/\/127\.0\.0\.1:\d+$/,
      ),
    ]);
    expect(await redis.exists('rl:a:{1}|override')).toBe(1);
    const text = await overrides('set', 'a:{1}', '--limit', '1');
    expect(text.stderr).toMatch(/^warning: 127\.0\.0\.1:\d+ has no rate_limit_v2/);

    // A limiter on v1 loads v1 only; v2 loaded besides, under RESP2 and RESP3 the master reads overrides.
    const old = await appLimiter('rl:', 'sliding_allow_v1');
    await new InstanceReporter({ limiter: old, client: redis, instanceId: 'web-1', intervalMs: MIN }).reportNow();
    await redis.call('FUNCTION', 'LOAD', librarySource('v2'));
    for (const resp of ['2', '3']) {
      const run = await overrides('set', 'a:{1}', '--limit', '1', '--resp', resp, '--json');
      expect(run.json<SetJson>().warnings).toEqual([
        'live instance web-1 (key prefix "rl:") calls sliding_allow_v1, which reads no overrides: ' +
          'the override applies to its decisions once it runs sliding_allow_v2',
      ]);
    }
    // Another prefix's limiters are not this key's.
    expect(
      (await overrides('set', 'a:{1}', '--exempt', '--key-prefix', 'other:', '--json')).json<SetJson>().warnings,
    ).toEqual([]);
  });
});

describe('overrides command line', () => {
  it.each([
    [['overrides'], '"overrides" needs a command: set, get, delete, list'],
    [['overrides', 'drop'], 'unknown command "overrides drop"; commands: set, get, delete, list'],
    [['overrides', 'set'], 'overrides set needs <key>'],
    [['overrides', 'set', 'k:{1}'], 'overrides set needs one of --limit <n>, --exempt or --block'],
    [
      ['overrides', 'set', 'k:{1}', '--block', '--exempt'],
      'give one of --limit, --exempt and --block, not --exempt and --block',
    ],
    [['overrides', 'set', 'k:{1}', '--limit=-1'], '--limit must be a whole number from 0 to 1000000000000, got "-1"'],
    [['overrides', 'set', 'k:{1}', '--limit', '2.5'], '--limit must be a whole number'],
    [['overrides', 'set', 'k:{1}', '--block', '--ttl', '0'], '--ttl must be a duration from 1 ms to a year'],
    [['overrides', 'set', 'k:{1}', '--block', '--ttl', '400d'], '--ttl must be a duration from 1 ms to a year'],
    [
      ['overrides', 'set', 'k:{1}', '--block', '--ttl', '1w'],
      '--ttl must be a duration from 1 ms to a year: ms, or a whole number with ms, s, m, h or d (30s, 15m, 7d), got "1w"',
    ],
    [
      ['overrides', 'set', 'k:{1}', '--block', '--note', 'x'.repeat(501)],
      '--note must be at most 500 characters, got 501',
    ],
    [['overrides', 'set', 'k:{1}', '--block', '--by', 'x'.repeat(501)], '--by must be at most 500 characters, got 501'],
    [
      ['overrides', 'set', 'a{}b', '--block'],
      '<key> "a{}b" cannot carry an override: "rl:a{}b" has braces but no valid cluster hash tag',
    ],
    [['overrides', 'get', 'a}b'], '<key> "a}b" cannot carry an override'],
    [['overrides', 'get', ''], 'overrides get needs a non-empty <key>'],
    [['overrides', 'delete', 'k', '--key-prefix', 'r{l}:'], '--key-prefix must have no { or }'],
    [['overrides', 'get', 'k', '--limit', '3'], '--limit does not apply to overrides get (it is for: overrides set)'],
    [['overrides', 'list', '--count', '0'], '--count must be a whole number from 1 to 10000, got "0"'],
    [['overrides', 'list', '--match', ''], '--match must be a non-empty glob pattern'],
    [['overrides', 'list', 'extra'], 'unexpected argument "extra" for overrides list'],
    [['functions', 'list', '--ttl', '1h'], '--ttl does not apply to functions list (it is for: overrides set)'],
  ])('%j is a usage error (exit 2): %s', async (args, message) => {
    // A port nothing listens on: a usage error is found before connecting.
    const run = await runCli([...args, '--url', 'redis://127.0.0.1:1']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`error: ${message}`);
  });

  it('reports a usage error as JSON with --json', async () => {
    const run = await runCli([
      'overrides',
      'set',
      'k:{1}',
      '--limit',
      'many',
      '--json',
      '--url',
      'redis://127.0.0.1:1',
    ]);
    expect(run.code).toBe(2);
    expect(run.json()).toEqual({
      ok: false,
      // Found while parsing the command line, as every flag error: before a command is known.
      command: null,
      exitCode: 2,
      error: { kind: 'usage', message: '--limit must be a whole number from 0 to 1000000000000, got "many"' },
    });
  });

  it('lists the overrides commands in --help', async () => {
    const help = await runCli(['--help']);
    expect(help.stdout).toContain('nestjs-sliding-limit overrides <command> [options]');
    for (const line of [
      'overrides set <key> (--limit <n> | --exempt | --block)',
      'overrides get <key>',
      'overrides delete <key>',
      'overrides list',
    ])
      expect(help.stdout).toContain(`  ${line}`);
  });
});

describe('overrides commands on a Redis Cluster (3 masters)', () => {
  const own = useRedisCluster({ masters: 3, replicasPerMaster: 0 });
  let client: Cluster;
  let seeds: string;
  let limiter: SlidingWindowLimiter;

  beforeAll(async () => {
    client = own.client();
    const [seed] = own.cluster().seeds;
    seeds = `${seed.host}:${seed.port}`;
    limiter = testLimiter({ client });
    await limiter.init();
  });
  afterAll(() => limiter?.close());

  it('sets overrides in their keys’ slots on every master, which the limiter obeys; lists and deletes them', async () => {
    const keys = ['plain', 'user:{1}', 'user:{2}', 'user:{3}', 'login:{ip:10.0.0.9}', 'other-plain'];
    expect(new Set(keys.map((key) => client.slots[calculateSlot(`rl:${key}`)]?.[0])).size).toBe(3);
    for (const key of keys) {
      const set = await runCli(['overrides', 'set', key, '--limit', '1', '--cluster', seeds, '--json']);
      expect({ key, code: set.code, warnings: set.json<SetJson>().warnings }).toEqual({ key, code: 0, warnings: [] });
    }
    for (const key of keys) {
      const decisions = [await limiter.consume(key, rule), await limiter.consume(key, rule)];
      expect({ key, decided: decisions.map((d) => [d.allowed, d.limit]) }).toEqual({
        key,
        decided: [
          [true, 1],
          [false, 1],
        ],
      });
    }
    const list = await runCli(['overrides', 'list', '--cluster', seeds, '--json']);
    expect(list.json<{ overrides: StoredOverride[] }>().overrides.map((o) => o.key)).toEqual([...keys].sort());
    const two = await runCli(['overrides', 'list', '--match', 'user:*', '--count', '2', '--cluster', seeds]);
    expect(two.stdout).toMatch(/^2 overrides under key prefix "rl:" matching "user:\*":\n/);
    expect(two.stdout).toContain('Stopped at --count 2: there may be more');

    for (const key of keys) {
      const deleted = await runCli(['overrides', 'delete', key, '--cluster', seeds, '--json']);
      expect({ key, deleted: deleted.json().deleted }).toEqual({ key, deleted: true });
    }
    expect((await runCli(['overrides', 'list', '--cluster', seeds, '--json'])).json().overrides).toEqual([]);
    const back = await limiter.consume('user:{1}', rule);
    expect([back.allowed, back.limit, back.override]).toEqual([true, 2, undefined]);
  }, 60_000);
});
