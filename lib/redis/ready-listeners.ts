import type { RedisConnection } from '../core/redis-connection';

/** The callbacks of every limiter on one client, and the one `ready` listener that runs them. */
interface SharedReadyListener {
  readonly callbacks: Set<() => void>;
  readonly listener: () => void;
}

const sharedByClient = new WeakMap<RedisConnection, SharedReadyListener>();

/**
 * Calls `callback` each time `client` becomes ready; returns the function that stops it. Every
 * limiter on a client shares one `ready` listener: a user's client may carry any number of limiters
 * without tripping Node's listener-leak warning (more than 10 listeners of one event), and once
 * the last one stops, the client has no listener of ours left.
 */
export function onClientReady(client: RedisConnection, callback: () => void): () => void {
  let shared = sharedByClient.get(client);
  if (!shared) {
    const callbacks = new Set<() => void>();
    // A copy: a callback that stops itself (or another) must not change the loop it runs in.
    shared = { callbacks, listener: () => [...callbacks].forEach((run) => run()) };
    sharedByClient.set(client, shared);
    client.on('ready', shared.listener);
  }
  const { callbacks, listener } = shared;
  // One entry per registration, even when the same function registers twice.
  const entry = () => callback();
  callbacks.add(entry);
  return () => {
    if (!callbacks.delete(entry) || callbacks.size > 0) return;
    client.off('ready', listener);
    sharedByClient.delete(client);
  };
}
