/** Which server answers on a connection, as its `INFO server` names it. */
export interface ServerIdentity {
  /** `valkey` for Valkey (which also reports a Redis-compatible `redis_version`), else `redis`. */
  readonly name: 'redis' | 'valkey';
  /** The server's own version: `valkey_version` on Valkey (e.g. `8.0.1`), `redis_version` on Redis. */
  readonly version: string;
}

/** `valkey 8.0.1`, for messages. */
export function describeServer(server: ServerIdentity): string {
  return `${server.name} ${server.version}`;
}
