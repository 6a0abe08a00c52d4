import type { RedisConnection } from '../core/redis-connection';

/** The callbacks of every limiter on one client, and the one `ready` listener that runs them. */
interface SharedReadyListener {
  readonly callbacks: Set<() => void>;
  readonly listener: () => void;
}

const sharedByClient = new WeakMap<RedisConnection, SharedReadyListener>();

/** Calls `callback` each time `client` is ready; returns the stop. One shared listener per client (no leak warning). */
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
