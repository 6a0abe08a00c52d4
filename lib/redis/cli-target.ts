import type { Redis } from 'ioredis';
import type { RedisConnection } from '../core/redis-connection';
import { isCluster, nodeAddress } from './redis-nodes';

// Commands printed for an operator name the server they are meant for, with `***` for a password.

/** A URL reaching `node` as a message may show it: `rediss://` with TLS, the user, `***` for a password. */
export function shownNodeUrl(node: Redis): string {
  const { tls, username, password, path } = node.options;
  if (path) return `redis://<the server at ${path}>`;
  const credentials = password ? `${username ?? ''}:***@` : username ? `${username}@` : '';
  return `${tls ? 'rediss' : 'redis'}://${credentials}${bracketed(nodeAddress(node))}`;
}

/** The CLI flags that reach `connection`'s servers: `--url <url>`, or `--cluster` with every master. */
export function cliTargetFlags(connection: RedisConnection): string {
  if (!isCluster(connection)) return `--url ${shownNodeUrl(connection)}`;
  const masters = connection.nodes('master');
  if (masters.length === 0) return '--cluster <host:port of a master>';
  // Plain host:port seeds unless the nodes need credentials or TLS, which only a URL seed carries.
  const plain = masters.every((node) => !node.options.password && !node.options.username && !node.options.tls);
  return `--cluster ${masters.map((node) => (plain ? nodeAddress(node) : shownNodeUrl(node))).join(',')}`;
}

/** `redis-cli -u <url>` for each master of `connection`, for messages offering redis-cli. */
export function redisCliTargets(connection: RedisConnection): string[] {
  const nodes = isCluster(connection) ? connection.nodes('master') : [connection];
  return nodes.map((node) => `redis-cli -u ${shownNodeUrl(node)}`);
}

/** An IPv6 address in URL form: `[::1]:6379`. */
function bracketed(address: string): string {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon);
  return host.includes(':') ? `[${host}]${address.slice(colon)}` : address;
}
