import type { Cluster, Redis } from 'ioredis';
import type { RedisConnection } from '../core/redis-connection';

/** True for an ioredis `Cluster`. */
export function isCluster(connection: RedisConnection): connection is Cluster {
  return (connection as { isCluster?: boolean }).isCluster === true;
}

/**
 * The clients of every master. Functions and scripts live per node, and a command sent through
 * a Cluster reaches one node only, so anything that loads or checks them goes through this list.
 */
export async function masterNodes(connection: RedisConnection): Promise<Redis[]> {
  if (!isCluster(connection)) return [connection];
  if (connection.status !== 'ready') {
    // Any command waits in the offline queue until the slot map is known.
    await connection.ping();
  }
  return connection.nodes('master');
}

/** host:port of a node, for messages. */
export function nodeAddress(node: Redis): string {
  const { host, port, path } = node.options;
  return path ?? `${host ?? 'localhost'}:${port ?? 6379}`;
}
