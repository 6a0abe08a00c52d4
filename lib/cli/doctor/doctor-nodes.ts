import Redis from 'ioredis';
import type { RedisConnection } from '../../core/redis-connection';
import { isCluster, nodeAddress } from '../../redis/redis-nodes';
import { messageOf } from '../../redis/reply';
import { hostAndPort } from '../connection-target';
import { parseInfoFields, parseReplicas } from './replies';

export interface DoctorNode {
  client: Redis;
  address: string;
  role: 'master' | 'replica';
  /** The master a replica follows (host:port), as the replica's master reports it. */
  master?: string;
}

/** The nodes found, and the replicas a master names that the doctor could not reach. */
export interface DoctorNodes {
  nodes: DoctorNode[];
  unreachable: { address: string; master: string; error: string }[];
  /** Closes the clients the doctor opened itself (replicas of a standalone master). */
  close(): void;
}

/** Every master and its replicas: from the slot map on a cluster, else from INFO replication. */
export async function findNodes(connection: RedisConnection, masters: readonly Redis[]): Promise<DoctorNodes> {
  const nodes: DoctorNode[] = masters.map((client) => ({ client, address: nodeAddress(client), role: 'master' }));
  const unreachable: DoctorNodes['unreachable'] = [];
  const opened: Redis[] = [];
  const byAddress = new Map(nodes.map((node) => [node.address, node]));

  const infos = await Promise.all(masters.map(async (master) => parseInfoFields(await master.info('replication'))));
  const replicaLists = infos.map((info) => parseReplicas(info).map((replica) => replica.address));
  if (!isCluster(connection) && infos[0]?.get('role') === 'slave') {
    // --url names a replica: check it as one (its link to its master), not as a master.
    nodes[0].role = 'replica';
    nodes[0].master = `${infos[0].get('master_host')}:${infos[0].get('master_port')}`;
  }
  if (isCluster(connection)) {
    for (const client of connection.nodes('slave')) {
      const address = nodeAddress(client);
      const master = masters.find((_, i) => replicaLists[i].includes(address));
      nodes.push({ client, address, role: 'replica', master: master && nodeAddress(master) });
      byAddress.set(address, nodes[nodes.length - 1]);
    }
  }
  await Promise.all(
    masters.map(async (master, i) => {
      for (const address of replicaLists[i]) {
        if (byAddress.has(address)) continue;
        const client = new Redis({ ...master.options, ...hostAndPort(address), lazyConnect: true, readOnly: true });
        client.on('error', () => undefined);
        opened.push(client);
        try {
          await client.connect();
          const node: DoctorNode = { client, address, role: 'replica', master: nodeAddress(master) };
          nodes.push(node);
          byAddress.set(address, node);
        } catch (error) {
          unreachable.push({ address, master: nodeAddress(master), error: messageOf(error) });
        }
      }
    }),
  );
  nodes.sort(
    (a, b) =>
      (a.role === b.role ? 0 : a.role === 'master' ? -1 : 1) ||
      a.address.localeCompare(b.address, undefined, { numeric: true }),
  );
  return {
    nodes,
    unreachable,
    close: () => {
      for (const client of opened) client.disconnect();
    },
  };
}
