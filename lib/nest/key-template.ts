import type { ExecutionContext } from '@nestjs/common';
import { describeValue } from '../core/value-checks';
import type { RateLimitKey, RateLimitKeyValue, RateLimitRequest } from './rate-limit-key';
import { toKeySegment } from './key-value';

/** What a compiled key reads a request through. */
export interface KeySource {
  request: RateLimitRequest;
  context: ExecutionContext;
  /** `Controller.handler` of the route being limited. */
  route: string;
  /** The client identity used for `ip` and for the fallback of missing parts (the guard's `getTracker`). */
  tracker(): string | undefined;
}

/** A key compiled at bootstrap: resolves to the key's identity part, or undefined without even an IP. */
export type CompiledKey = (source: KeySource) => string | undefined | Promise<string | undefined>;

interface KeyPart {
  /** How the part shows in the Redis key, e.g. `ip`, `user`, `body.phone`. */
  label: string;
  /** Reads the raw value; absent for the constant `global`. */
  read?: (source: KeySource) => unknown;
}

const FIELD = /^[A-Za-z0-9_-]+$/;
const PATH = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const SOURCES = 'ip, route, global, user, user:<path>, param:<name>, body:<path>, query:<name>, header:<name>';

/**
 * Problems of a `key` option (a function or a template), each naming the option as `label`.
 * Templates are parts joined by `+`; see {@link compileKey}.
 */
export function describeKeyProblems(key: unknown, label: string): string[] {
  if (typeof key === 'function') return [];
  if (typeof key !== 'string')
    return [`${label} must be a key template string or a function (req, context) => string, got ${describeValue(key)}`];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const part of key.split('+')) {
    const parsed = parsePart(part.trim());
    if (typeof parsed === 'string') problems.push(`${label} ${describeValue(key)}: ${parsed}`);
    else if (seen.has(parsed.label))
      problems.push(`${label} ${describeValue(key)}: part ${describeValue(part)} appears twice`);
    else seen.add(parsed.label);
  }
  return problems;
}

/**
 * Compiles a valid key into a fast extractor. Parts render as `label:value` (`ip:10.0.0.1`); a part
 * the request lacks renders as `no-<label>` with the client IP appended (`no-user:ip:10.0.0.1`), never
 * a shared bucket. Without an IP the key resolves to undefined.
 */
export function compileKey(key: RateLimitKey): CompiledKey {
  if (typeof key === 'function') {
    // A key function that answers synchronously keeps the request on the synchronous path.
    const fromValue = (value: RateLimitKeyValue, source: KeySource) =>
      toKeySegment(value) ?? withFallback('no-key', source);
    return (source) => {
      const value = key(source.request, source.context);
      if (isThenable(value)) return Promise.resolve(value).then((resolved) => fromValue(resolved, source));
      return fromValue(value, source);
    };
  }
  const parts = key.split('+').map((part) => parsePart(part.trim()) as KeyPart);
  // `label:` of each part, joined once here rather than for every request.
  const labelled = parts.map((part) => `${part.label}:`);
  const hasIp = parts.some((part) => part.label === 'ip');
  // Runs for every request: the identity is concatenated as it goes, with no array per request.
  return (source) => {
    let identity = '';
    let missing = false;
    let ipMissing = false;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      let rendered: string;
      if (!part.read) {
        rendered = part.label;
      } else {
        const segment = toKeySegment(part.read(source));
        if (segment === undefined) {
          missing = true;
          if (part.label === 'ip') ipMissing = true;
          rendered = `no-${part.label}`;
        } else {
          rendered = labelled[i] + segment;
        }
      }
      identity = i === 0 ? rendered : `${identity}:${rendered}`;
    }
    if (!missing) return identity;
    if (!hasIp) return withFallback(identity, source);
    // The IP is part of the key already and keeps the bucket per client; without it nothing does.
    return ipMissing ? undefined : identity;
  };
}

/** Whether any caller can name someone else's key: a template reading only values the caller chooses. */
export function isNamedByCaller(key: RateLimitKey): boolean {
  if (typeof key === 'function') return false;
  const kinds = key.split('+').map((part) => part.trim().split(':')[0]);
  const chosen = kinds.some((kind) => kind === 'body' || kind === 'query' || kind === 'param');
  return chosen && !kinds.some((kind) => kind === 'ip' || kind === 'user' || kind === 'header');
}

function isThenable(value: unknown): value is PromiseLike<RateLimitKeyValue> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}

function withFallback(identity: string, source: KeySource): string | undefined {
  const ip = toKeySegment(source.tracker());
  return ip === undefined ? undefined : `${identity}:ip:${ip}`;
}

function parsePart(part: string): KeyPart | string {
  const colon = part.indexOf(':');
  const kind = colon === -1 ? part : part.slice(0, colon);
  const arg = colon === -1 ? undefined : part.slice(colon + 1);
  const needs = (pattern: RegExp, what: string): string | undefined =>
    arg !== undefined && pattern.test(arg)
      ? undefined
      : `${kind}: needs a ${what} made of letters, digits, "_" or "-", e.g. ${kind}:${kind === 'header' ? 'x-api-key' : 'phone'}`;

  switch (kind) {
    case 'ip':
    case 'route':
    case 'global':
      if (arg !== undefined) return `part ${describeValue(part)}: ${kind} takes no argument`;
      if (kind === 'global') return { label: 'global' };
      return kind === 'ip' ? { label: 'ip', read: (s) => s.tracker() } : { label: 'route', read: (s) => s.route };
    case 'user': {
      const path = arg ?? 'id';
      if (!PATH.test(path)) return `part ${describeValue(part)}: user: takes a property path such as id or profile.id`;
      const read = pathReader(path);
      return { label: path === 'id' ? 'user' : `user.${path}`, read: (s) => read(userOf(s.request)) };
    }
    case 'param':
    case 'query': {
      const problem = needs(FIELD, 'name');
      if (problem) return `part ${describeValue(part)}: ${problem}`;
      const name = arg as string;
      const read = pathReader(name);
      return {
        label: `${kind}.${name}`,
        read: kind === 'param' ? (s) => read(s.request.params) : (s) => read(s.request.query),
      };
    }
    case 'body': {
      const problem = needs(PATH, 'property path');
      if (problem) return `part ${describeValue(part)}: ${problem}`;
      const read = pathReader(arg as string);
      return { label: `body.${arg}`, read: (s) => read(s.request.body) };
    }
    case 'header': {
      const problem = needs(FIELD, 'header name');
      if (problem) return `part ${describeValue(part)}: ${problem}`;
      const name = (arg as string).toLowerCase();
      const read = pathReader(name);
      return { label: `header.${name}`, read: (s) => headerValue(read(s.request.headers)) };
    }
    default:
      return `unknown part ${describeValue(part)}; parts are ${SOURCES}, joined with +`;
  }
}

/** `req.user`; on Fastify a Nest middleware sets it on the raw Node request instead. */
function userOf(request: RateLimitRequest): unknown {
  if (request.user !== undefined) return request.user;
  const raw = (request as { raw?: { user?: unknown } }).raw;
  return typeof raw === 'object' && raw !== null ? raw.user : undefined;
}

/** Node joins most repeated headers itself; the few it keeps as arrays (set-cookie) are joined here. */
function headerValue(value: unknown): unknown {
  return Array.isArray(value) ? value.join(', ') : value;
}

type PathReader = (root: unknown) => unknown;

/** A reader of `a.b.c`, split once; own properties only (never `constructor` or `__proto__`). */
function pathReader(path: string): PathReader {
  const steps = path.split('.');
  if (steps.length === 1) return (root) => ownProperty(root, path);
  return (root) => {
    let value = root;
    for (const step of steps) {
      value = ownProperty(value, step);
      if (value === undefined) return undefined;
    }
    return value;
  };
}

function ownProperty(value: unknown, name: string): unknown {
  if (typeof value !== 'object' || value === null || !Object.prototype.hasOwnProperty.call(value, name))
    return undefined;
  return (value as Record<string, unknown>)[name];
}
