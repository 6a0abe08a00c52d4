import { redactUrl } from '../core/redact';
import type { ConnectionTarget } from './cli-options';

// The connection target as text, apart from connection.ts so that every run need not load ioredis.

/** A connection target for messages: the URL without its password, or the seeds. */
export function describeTarget(target: ConnectionTarget): string {
  return target.kind === 'cluster' ? `the cluster at ${target.seeds.map(redactUrl).join(',')}` : redactUrl(target.url);
}

/** The flags that reach the same Redis (password redacted), even from REDIS_URL: a copied command must too. */
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
    const secret = password || username;
    if (secret) secrets.push(secret, decoded(secret));
  }
  return secrets;
}

/** `host:port` (the host may hold colons: IPv6) as its parts. */
export function hostAndPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon), port: Number(address.slice(colon + 1)) };
}

/** A URL component percent-decoded, or as it is when it is not. */
export function decoded(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
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
