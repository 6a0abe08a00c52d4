import { redactUrl } from '../core/redact';
import type { ConnectionTarget } from './cli-options';

/*
 * The connection target as text: for messages, for the commands the CLI suggests, and the secrets
 * to redact from its output. Kept apart from connection.ts, so that what every run needs does not
 * load ioredis.
 */

/** A connection target for messages: the URL without its password, or the seeds. */
export function describeTarget(target: ConnectionTarget): string {
  return target.kind === 'cluster' ? `the cluster at ${target.seeds.map(redactUrl).join(',')}` : redactUrl(target.url);
}

/**
 * The flags that reach the same Redis, for commands suggested in messages, password redacted. Also
 * when the URL came from REDIS_URL (or is the default): a command copied into another shell must
 * not reach another server.
 */
export function connectionFlags(target: ConnectionTarget): string {
  if (target.kind === 'cluster') return ` --cluster ${target.seeds.map(redactUrl).join(',')}`;
  return ` --url ${redactUrl(target.url)}`;
}

/** Every password given on the command line or in REDIS_URL, decoded and as written, for redaction. */
export function secretsOf(target: ConnectionTarget): string[] {
  const urls = target.kind === 'cluster' ? target.seeds : [target.url];
  const secrets: string[] = [];
  for (const url of urls) {
    const { password, username } = parseUrlSafely(url) ?? {};
    for (const value of [password, username && !password ? username : undefined]) {
      if (!value) continue;
      secrets.push(value);
      try {
        secrets.push(decodeURIComponent(value));
      } catch {
        // Not percent-encoded.
      }
    }
  }
  return secrets;
}

/** A redis:// or rediss:// URL parsed, or undefined for host:port and unparseable text. */
export function parseUrlSafely(text: string): URL | undefined {
  if (!/^rediss?:\/\//i.test(text)) return undefined;
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}
