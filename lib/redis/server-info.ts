import type { Redis } from 'ioredis';
import { UnexpectedReplyError } from '../core/errors/unexpected-reply.error';
import type { ServerIdentity } from '../core/server-identity';
import { toText } from './reply';

/**
 * The server's identity from an `INFO` reply (Valkey also reports a compatible `redis_version`).
 * @throws UnexpectedReplyError when the reply names no version
 */
export function parseServerInfo(info: unknown): ServerIdentity {
  const fields = new Map<string, string>();
  for (const line of toText(info).split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  const valkeyVersion = fields.get('valkey_version');
  if (fields.get('server_name')?.toLowerCase() === 'valkey' || valkeyVersion !== undefined) {
    const version = valkeyVersion ?? fields.get('redis_version');
    if (version) return { name: 'valkey', version };
  }
  const redisVersion = fields.get('redis_version');
  if (!redisVersion) throw new UnexpectedReplyError('INFO server', info);
  return { name: 'redis', version: redisVersion };
}

/** Asks a node who it is (`INFO server`). */
export async function readServerInfo(node: Redis): Promise<ServerIdentity> {
  return parseServerInfo(await node.info('server'));
}

/** The major version, `8` of `8.0.1`. */
export function majorVersionOf(server: ServerIdentity): number {
  return Number.parseInt(server.version, 10);
}

/** Whether the server's version has Redis Functions (Redis 7+, every Valkey); enabled is another question. */
export function hasFunctionsByVersion(server: ServerIdentity): boolean {
  return server.name === 'valkey' || majorVersionOf(server) >= 7;
}
