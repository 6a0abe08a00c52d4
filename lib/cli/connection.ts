import Redis, { Cluster, ClusterNode, RedisOptions } from 'ioredis';
import type { RedisConnection } from '../core/redis-connection';
import { describeServer, type ServerIdentity } from '../core/server-identity';
import { functionsUnavailableOn } from '../redis/function-support';
import { masterNodes, nodeAddress } from '../redis/redis-nodes';
import { toText } from '../redis/reply';
import { hasFunctionsByVersion, parseServerInfo } from '../redis/server-info';
import type { ConnectionTarget, RespVersion } from './cli-options';
import { decoded, describeTarget, hostAndPort, parseUrlSafely } from './connection-target';
import { CliError, ExitCode, usage } from './exit-codes';
import { closeConnection } from '../redis/close-connection';

interface CliConnection {
  readonly connection: RedisConnection;
  readonly masters: Redis[];
  readonly servers: ReadonlyMap<Redis, ServerIdentity>;
  readonly close: () => Promise<void>;
}

/**
 * Connects, failing fast (no retry, `timeoutMs` for everything), and checks that every master can run
 * Redis Functions and that a standalone URL is not a cluster node.
 * @throws CliError with exit code 3 when Redis cannot be reached or authentication fails
 */
export async function openConnection(
  target: ConnectionTarget,
  timeoutMs: number,
  resp?: RespVersion,
): Promise<CliConnection> {
  const nodeOptions: RedisOptions = {
    ...(resp === undefined ? {} : { protocol: resp }),
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    // How long ioredis holds the process open for a socket to close after disconnect().
    disconnectTimeout: 100,
  };
  let lastError: Error | undefined;
  const remember = (error: Error) => (lastError = error);
  let connection: RedisConnection;
  if (target.kind === 'cluster') {
    const credentials = target.seeds.map(parseUrlSafely).find((url) => url?.password || url?.username);
    connection = new Cluster(target.seeds.map(toClusterNode), {
      lazyConnect: true,
      clusterRetryStrategy: () => null,
      // Its ready check would hang connect() on a cluster_state:fail cluster, the one doctor must diagnose.
      enableReadyCheck: false,
      slotsRefreshTimeout: timeoutMs,
      enableOfflineQueue: true,
      redisOptions: {
        ...nodeOptions,
        username: credentials?.username ? decoded(credentials.username) : undefined,
        password: credentials?.password ? decoded(credentials.password) : undefined,
        tls: target.seeds.some((seed) => /^rediss:/i.test(seed)) ? {} : undefined,
      },
    });
  } else {
    connection = new Redis(target.url, nodeOptions);
  }
  connection.on('error', remember);
  const close = async () => {
    connection.off('error', remember);
    connection.on('error', () => undefined);
    await closeConnection(connection);
  };

  try {
    await connection.connect();
    const masters = await masterNodes(connection);
    if (masters.length === 0) throw new Error('the cluster has no master');
    const identities = await Promise.all(masters.map((node) => checkNode(node, target)));
    return { connection, masters, servers: new Map(masters.map((node, i) => [node, identities[i]])), close };
  } catch (error) {
    await close();
    if (error instanceof CliError) throw error;
    throw connectionError(target, lastError ?? (error as Error));
  }
}

async function checkNode(node: Redis, target: ConnectionTarget): Promise<ServerIdentity> {
  const info = toText(await node.info());
  const server = parseServerInfo(info);
  if (!hasFunctionsByVersion(server)) {
    throw new CliError(
      ExitCode.Failed,
      `${nodeAddress(node)} runs ${describeServer(server)}; Redis Functions need Redis 7 or newer (or Valkey). ` +
        `On older servers the limiter runs its Lua as scripts (mode: 'script') and there is nothing to manage.`,
    );
  }
  if (target.kind === 'standalone' && /cluster_enabled:1/.test(info)) {
    throw usage(
      `${nodeAddress(node)} is a Redis Cluster node: a command would reach this node only. ` +
        `Pass --cluster ${nodeAddress(node)} so that it reaches every master.`,
    );
  }
  const unavailable = await functionsUnavailableOn(node);
  if (unavailable) {
    throw new CliError(ExitCode.Failed, `${unavailable.message}; until then the functions commands cannot work`, {
      cause: unavailable,
    });
  }
  return server;
}

/** The error a failure to connect (or a dropped connection) becomes: exit code 3, and what to check. */
export function connectionError(target: ConnectionTarget, cause: Error): CliError {
  const message = cause.message.split('\n')[0];
  if (/WRONGPASS|NOAUTH|invalid password|AUTH failed/i.test(cause.message)) {
    const where =
      target.kind === 'cluster'
        ? 'the --cluster seed URLs (redis://user:password@host:port)'
        : 'the URL (--url or REDIS_URL)';
    return new CliError(
      ExitCode.Connection,
      `authentication to ${describeTarget(target)} failed (${message}); check the user and password in ${where}`,
      { cause },
    );
  }
  const how = target.kind === 'cluster' ? 'check the --cluster seeds' : 'check --url or REDIS_URL';
  return new CliError(
    ExitCode.Connection,
    `cannot reach Redis at ${describeTarget(target)} (${message}); ${how}, that Redis is running, and --timeout if the network is slow`,
    { cause },
  );
}

function toClusterNode(seed: string): ClusterNode {
  const url = parseUrlSafely(seed);
  if (url) return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) };
  return hostAndPort(seed);
}
