import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, type Redis } from 'ioredis';
import { nodeAddress } from '../../lib/redis/redis-nodes';
import { RedisServer, startRedisServer } from './redis-server';
import { serverBinaries } from './test-server';

const run = promisify(execFile);

/** A local Redis Cluster of redis-server (or valkey-server) processes on loopback ports, started by the tests. */
export interface RedisCluster {
  readonly nodes: RedisServer[];
  /** `{ host, port }` of every node, as ioredis' Cluster takes its seeds. */
  readonly seeds: { host: string; port: number }[];
  stop(): Promise<void>;
}

/**
 * Starts `masters` masters with `replicasPerMaster` replicas each (3 + 3 by default), joins them
 * with `redis-cli --cluster create` (valkey-cli on Valkey) and waits until every node reports `cluster_state:ok`.
 * `nodeTimeoutMs` (cluster-node-timeout, 1000 by default: failovers within seconds) is how long a
 * node may not answer before its replica takes over; a test that freezes a master without meaning a
 * failover sets it well above the freeze.
 */
export async function startRedisCluster({
  masters = 3,
  replicasPerMaster = 1,
  nodeTimeoutMs = 1000,
} = {}): Promise<RedisCluster> {
  const count = masters * (1 + replicasPerMaster);
  const nodes: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.stop()));
  };
  try {
    for (let i = 0; i < count; i++) {
      nodes.push(
        await startRedisServer([
          '--cluster-enabled',
          'yes',
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          '--cluster-config-file',
          'nodes.conf',
          '--repl-diskless-sync-delay',
          '0',
        ]),
      );
    }
    const addresses = nodes.map((node) => `127.0.0.1:${node.port}`);
    await run(serverBinaries().cli, [
      '--cluster',
      'create',
      ...addresses,
      '--cluster-replicas',
      String(replicasPerMaster),
      '--cluster-yes',
    ]);
    await waitForClusterOk(nodes);
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes, seeds: nodes.map((node) => ({ host: '127.0.0.1', port: node.port })), stop };
}

/** Waits until every running node says `cluster_state:ok` and knows every slot. */
export async function waitForClusterOk(nodes: RedisServer[], timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const running = nodes.filter((node) => node.process.exitCode === null && node.process.signalCode === null);
    const states = await Promise.all(
      running.map((node) =>
        run(serverBinaries().cli, ['-p', String(node.port), 'CLUSTER', 'INFO'])
          .then(({ stdout }) => stdout)
          .catch(() => ''),
      ),
    );
    if (states.every((info) => info.includes('cluster_state:ok') && info.includes('cluster_slots_assigned:16384')))
      return;
    if (Date.now() > deadline) throw new Error(`cluster not ok after ${timeoutMs} ms:\n${states.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One node as CLUSTER NODES describes it. */
export interface ClusterNodeEntry {
  id: string;
  port: number;
  master: boolean;
  failed: boolean;
  masterId?: string;
  slots: Array<[number, number]>;
}

/** CLUSTER NODES, parsed: read from the server, independently of ioredis' slot map. */
export async function clusterNodes(admin: Redis): Promise<ClusterNodeEntry[]> {
  const text = String(await admin.call('CLUSTER', 'NODES'));
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, masterId, , , , , ...slots] = line.split(' ');
      const flagList = flags.split(',');
      return {
        id,
        port: Number(/:(\d+)@/.exec(address)?.[1]),
        master: flagList.includes('master'),
        failed: flagList.includes('fail'),
        masterId: masterId === '-' ? undefined : masterId,
        slots: slots
          .filter((slot) => !slot.startsWith('['))
          .map((slot) => {
            const [from, to = from] = slot.split('-').map(Number);
            return [from, to] as [number, number];
          }),
      };
    });
}

/** Three masters serving slots, each with one replica. */
export function isSettled(nodes: ClusterNodeEntry[]): boolean {
  const masters = nodes.filter((node) => node.master && node.slots.length > 0);
  const replicas = nodes.filter((node) => !node.master && masters.some((master) => master.id === node.masterId));
  return nodes.length === 6 && masters.length === 3 && replicas.length === 3;
}

/** A Redis Cluster of the calling block's own, and a client of it. */
export interface OwnRedisCluster {
  /** The cluster's processes; only inside hooks and tests. */
  cluster(): RedisCluster;
  /** An ioredis Cluster client, ready (its slot map read); only inside hooks and tests. */
  client(): Cluster;
  /** The client's masters, sorted by address. */
  masters(): Redis[];
}

/**
 * Starts a cluster (see {@link startRedisCluster} for the options) and a client of it in `beforeAll`;
 * in `afterAll`, quits the client and stops the cluster. Call it before any hook that uses them.
 */
export function useRedisCluster(options: Parameters<typeof startRedisCluster>[0] = {}): OwnRedisCluster {
  let running: { cluster: RedisCluster; client: Cluster } | undefined;
  beforeAll(async () => {
    const cluster = await startRedisCluster(options);
    const client = new Cluster(cluster.seeds);
    running = { cluster, client };
    await client.ping();
  }, 60_000);
  afterAll(async () => {
    await running?.client.quit();
    await running?.cluster.stop();
    running = undefined;
  });
  const started = () => {
    if (!running) throw new Error('the own cluster runs only between its beforeAll and afterAll');
    return running;
  };
  return {
    cluster: () => started().cluster,
    client: () => started().client,
    masters: () =>
      [...started().client.nodes('master')].sort((a, b) =>
        nodeAddress(a).localeCompare(nodeAddress(b), undefined, { numeric: true }),
      ),
  };
}
