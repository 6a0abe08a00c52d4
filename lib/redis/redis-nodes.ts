import type { Cluster, Redis } from 'ioredis';
import type { RedisConnection } from '../core/redis-connection';

/** True for an ioredis `Cluster`. */
export function isCluster(connection: RedisConnection): connection is Cluster {
  return (connection as { isCluster?: boolean }).isCluster === true;
}

/** The clients of every master: what loads or checks functions must reach each (a Cluster sends to one). */
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
