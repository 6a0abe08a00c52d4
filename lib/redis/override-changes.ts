import Redis from 'ioredis';
import type { Cluster } from 'ioredis';
import type { OverrideChangeListener } from '../core/limiter-backend';
import type { RedisConnection } from '../core/redis-connection';
import { isCluster } from './redis-nodes';

/**
 * The channel every override store publishes a change on (`PUBLISH`, which a cluster carries to every
 * node), its message the limited key with its prefix: the limiters drop their cached refusals of it.
 */
export const OVERRIDE_CHANGES_CHANNEL = 'sliding-limit:override-changes';

/** How long a cluster's subscriber waits before it tries a master again, ms. */
const RESELECT_MS = 1000;

/**
 * Subscribes to override changes on a connection of its own (a duplicate of the client's, or of one
 * cluster master's), telling `listener` each change and whether changes reach it: `watching(true)`
 * once subscribed, `watching(false)` whenever the connection drops, where a change may be lost.
 * Returns the function that stops it. The connection never keeps the process alive.
 */
export function watchOverrideChanges(client: RedisConnection, listener: OverrideChangeListener): () => void {
  let subscriber: Redis | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const connect = (): void => {
    timer = undefined;
    if (stopped) return;
    const source = isCluster(client) ? anyMaster(client) : client;
    if (!source) return reselectLater();
    const connection = source.duplicate({
      autoResubscribe: false,
      autoResendUnfulfilledCommands: false,
      lazyConnect: false,
    });
    subscriber = connection;
    connection.on('error', () => undefined); // the limiter's own connection reports Redis errors
    connection.on('connect', () => connection.stream.unref());
    connection.on('ready', () => {
      connection.subscribe(OVERRIDE_CHANGES_CHANNEL).then(
        () => listener.watching(true),
        () => connection.disconnect(true),
      );
    });
    connection.on('message', (channel: string, key: string) => {
      if (channel === OVERRIDE_CHANGES_CHANNEL) listener.changed(key);
    });
    connection.on('close', () => listener.watching(false));
    // A cluster node's duplicate does not reconnect (ioredis gives its nodes no retry strategy).
    connection.on('end', () => {
      if (subscriber === connection) reselectLater();
    });
  };
  const reselectLater = (): void => {
    if (stopped || timer) return;
    timer = setTimeout(connect, RESELECT_MS);
    timer.unref();
  };

  connect();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    subscriber?.disconnect();
    subscriber = undefined;
  };
}

/** A master of the cluster as ioredis knows it now, or undefined before it knows any. */
function anyMaster(cluster: Cluster): Redis | undefined {
  const masters = cluster.nodes('master');
  return masters[Math.floor(Math.random() * masters.length)];
}
