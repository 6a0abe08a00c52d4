import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { FunctionNotLoadedError } from '../../lib';
import { InstanceReporter } from '../../lib/limiter/instance-reporter';
import { readLibrarySource } from '../../lib/redis/lua-library';
import { nodeAddress } from '../../lib/redis/redis-nodes';
import { parseFunctionList } from '../../lib/redis/reply';
import { useRedisCluster } from '../support/redis-cluster';
import { rejectionOf } from '../support/rejection';
import { useTestLimiters } from '../support/test-limiter';
import { testServerIdentity } from '../support/test-server';
import { runCli } from './run-cli';

const V1 = readLibrarySource('rate_limit_v1.lua');

describe('functions commands on a Redis Cluster (3 masters + 3 replicas)', () => {
  const own = useRedisCluster();
  let client: Cluster;
  let masters: Redis[];
  let seeds: string;
  let dir: string;

  beforeAll(() => {
    client = own.client();
    masters = own.masters();
    // Two seeds are enough: the CLI discovers the other nodes.
    seeds = own
      .cluster()
      .seeds.slice(0, 2)
      .map((s) => `${s.host}:${s.port}`)
      .join(',');
    dir = mkdtempSync(join(tmpdir(), 'nsl-cluster-dump-'));
  });
  beforeEach(async () => {
    await Promise.all(masters.map((node) => node.function('FLUSH')));
  });
  const limiterWith = useTestLimiters(() => ({ client }));
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function librariesByNode(): Promise<Record<string, string[]>> {
    const entries = await Promise.all(
      masters.map(
        async (node) =>
          [
            nodeAddress(node),
            parseFunctionList(await node.call('FUNCTION', 'LIST'))
              .map((l) => l.name)
              .sort(),
          ] as const,
      ),
    );
    return Object.fromEntries(entries);
  }

  it('list flags the master that lacks v1, and load puts it there only', async () => {
    expect(masters).toHaveLength(3);
    const [a, b, c] = masters;
    await a.call('FUNCTION', 'LOAD', V1);
    await b.call('FUNCTION', 'LOAD', V1);

    const list = await runCli(['functions', 'list', '--cluster', seeds, '--json']);
    expect(list.code).toBe(1);
    const { servers, nodes, problems } = list.json<{
      servers: unknown[];
      nodes: { node: string; libraries: { library: string }[] }[];
      problems: { kind: string; node: string; library: string; message: string }[];
    }>();
    expect(servers).toEqual(masters.map((m) => ({ node: nodeAddress(m), ...testServerIdentity() })));
    expect(nodes.map((n) => n.node)).toEqual(masters.map(nodeAddress));
    expect(nodes.map((n) => n.libraries.map((l) => l.library))).toEqual([['rate_limit_v1'], ['rate_limit_v1'], []]);
    expect(problems).toEqual([
      {
        kind: 'missing',
        node: nodeAddress(c),
        library: 'rate_limit_v1',
        message: `${nodeAddress(c)} lacks rate_limit_v1, loaded on ${nodeAddress(a)}, ${nodeAddress(b)}; run: npx nestjs-sliding-limit functions load v1 --cluster ${seeds}`,
      },
    ]);
    const text = await runCli(['functions', 'list', '--cluster', seeds]);
    const { name, version } = testServerIdentity();
    expect(text.stdout).toContain(`${nodeAddress(c)} (${name} ${version})\n  (no libraries)\n`);
    expect(text.stdout).toContain(`1 problem:\n  - ${nodeAddress(c)} lacks rate_limit_v1`);

    const load = await runCli(['functions', 'load', 'v1', '--cluster', seeds, '--json']);
    expect(load.code).toBe(0);
    expect(load.json<{ nodes: unknown[] }>().nodes).toEqual([
      { node: nodeAddress(a), result: 'unchanged' },
      { node: nodeAddress(b), result: 'unchanged' },
      { node: nodeAddress(c), result: 'loaded' },
    ]);
    expect((await runCli(['functions', 'list', '--cluster', seeds])).code).toBe(0);
    expect(await librariesByNode()).toEqual(
      Object.fromEntries(masters.map((m) => [nodeAddress(m), ['rate_limit_v1']])),
    );
  });

  it("the library's load command names every master with --cluster (FunctionNotLoadedError, loadFunctions 'verify')", async () => {
    const limiter = limiterWith({
      functionName: 'sliding_allow_v2',
      loadFunctions: 'verify',
    });
    const error = await rejectionOf(limiter.init());
    expect(error).toBeInstanceOf(FunctionNotLoadedError);
    const addresses = masters.map(nodeAddress);
    const { message } = error as Error;
    const [command] = /npx nestjs-sliding-limit functions load v2 --cluster (\S+)/.exec(message) ?? [''];
    expect(command.split('--cluster ')[1]?.split(',').sort()).toEqual([...addresses].sort());
    for (const address of addresses) expect(message).toContain(`redis-cli -u redis://${address} -x FUNCTION LOAD <`);
    // Run as printed, the command loads it on every master.
    expect((await runCli(command.split(' ').slice(2))).code).toBe(0);
    await expect(limiter.init()).resolves.toBeUndefined();
  });

  it('list names the one master that lacks what live instances call, once, with the --cluster fix', async () => {
    const limiter = limiterWith({
      keyPrefix: 'list:',
      functionName: 'sliding_allow_v1',
    });
    await limiter.consume('k{1}', { limit: 5, windowMs: 60_000 });
    await Promise.all(masters.map((node) => node.call('FUNCTION', 'LOAD', 'REPLACE', V1)));
    const reporter = new InstanceReporter({ limiter, client, instanceId: 'web-1', intervalMs: 60_000 });
    await reporter.reportNow();
    const [, , c] = masters;
    await c.function('FLUSH');
    try {
      const run = await runCli(['functions', 'list', '--cluster', seeds, '--json']);
      expect(run.code).toBe(1);
      expect(run.json<{ problems: unknown[] }>().problems).toEqual([
        {
          kind: 'called-missing',
          node: nodeAddress(c),
          library: 'rate_limit_v1',
          instances: ['web-1'],
          message:
            `rate_limit_v1 (v1) is not loaded on ${nodeAddress(c)}, and live instances call sliding_allow_v1: ` +
            `web-1 (prefix list:); run: npx nestjs-sliding-limit functions load v1 --cluster ${seeds}`,
        },
      ]);
    } finally {
      await reporter.close();
    }
  });

  it('refuses --url on a cluster node (it would reach one master), naming --cluster', async () => {
    const run = await runCli(['functions', 'load', 'v2', '--url', `redis://${nodeAddress(masters[0])}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `${nodeAddress(masters[0])} is a Redis Cluster node: a command would reach this node only. Pass --cluster ${nodeAddress(masters[0])}`,
    );
    expect(await librariesByNode()).toEqual(Object.fromEntries(masters.map((m) => [nodeAddress(m), []])));
  });

  it('status and delete read the reports on every master; delete removes the library from every master once unused', async () => {
    const limiter = limiterWith({
      keyPrefix: 'rl:',
      functionName: 'sliding_allow_v1',
    });
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => limiter.consume(`user:{${i}}`, { limit: 1, windowMs: 60_000 })),
    );
    const reporters = ['a', 'b', 'c', 'd', 'e'].map(
      (id) => new InstanceReporter({ limiter, client, instanceId: `node-${id}`, intervalMs: 60_000 }),
    );
    await Promise.all(reporters.map((r) => r.reportNow()));
    // The report keys live in different slots, so on different masters.
    const holding = await Promise.all(masters.map((node) => node.dbsize()));
    expect(holding.filter((n) => n > 0).length).toBeGreaterThan(1);

    const status = await runCli(['functions', 'status', '--cluster', seeds, '--json']);
    expect(status.code).toBe(0);
    const json = status.json<{
      instances: { instanceId: string }[];
      functions: { functionName: string; stable: string[]; calls: number }[];
    }>();
    expect(json.instances.map((i) => i.instanceId)).toEqual(['node-a', 'node-b', 'node-c', 'node-d', 'node-e']);
    expect(json.functions).toEqual([
      expect.objectContaining({
        functionName: 'sliding_allow_v1',
        stable: ['node-a', 'node-b', 'node-c', 'node-d', 'node-e'],
        calls: 150,
      }),
    ]);

    const refused = await runCli(['functions', 'delete', 'v1', '--cluster', seeds]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/^Refused: 5 live instances still call rate_limit_v1:/);
    expect(await librariesByNode()).toEqual(
      Object.fromEntries(masters.map((m) => [nodeAddress(m), ['rate_limit_v1']])),
    );

    await Promise.all(reporters.map((r) => client.del(r.key)));
    const deleted = await runCli(['functions', 'delete', 'v1', '--cluster', seeds, '--json']);
    expect(deleted.code).toBe(0);
    expect(deleted.json<{ nodes: unknown[] }>().nodes).toEqual(
      masters.map((m) => ({ node: nodeAddress(m), result: 'deleted' })),
    );
    expect(await librariesByNode()).toEqual(Object.fromEntries(masters.map((m) => [nodeAddress(m), []])));
  });

  it('dump refuses masters that disagree; dump → FUNCTION FLUSH on every master → restore brings them all back', async () => {
    const file = join(dir, 'cluster.rdb');
    await masters[0].call('FUNCTION', 'LOAD', V1);
    const refused = await runCli(['functions', 'dump', file, '--cluster', seeds]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the masters hold different libraries');
    expect(refused.stderr).toContain('Nothing was written.');

    expect((await runCli(['functions', 'load', 'v1', '--cluster', seeds])).code).toBe(0);
    expect((await runCli(['functions', 'load', 'v2', '--cluster', seeds])).code).toBe(0);
    expect((await runCli(['functions', 'dump', file, '--cluster', seeds])).code).toBe(0);
    await Promise.all(masters.map((node) => node.function('FLUSH')));

    const restored = await runCli(['functions', 'restore', file, '--cluster', seeds, '--policy', 'append', '--json']);
    expect(restored.code).toBe(0);
    expect(restored.json<{ nodes: unknown[] }>().nodes).toEqual(
      masters.map((m) => ({ node: nodeAddress(m), result: 'restored', libraries: ['rate_limit_v1', 'rate_limit_v2'] })),
    );
    // The limiter can call both on every slot again.
    const limiter = limiterWith({
      keyPrefix: 'restored:',
      functionName: 'sliding_allow_v2',
      loadFunctions: 'off',
    });
    const decisions = await Promise.all(
      Array.from({ length: 20 }, (_, i) => limiter.consume(`k{${i}}`, { limit: 5, windowMs: 60_000 })),
    );
    expect(decisions.every((d) => d.allowed && d.remaining === 4)).toBe(true);
  });
});
