import { ServerResponse } from 'node:http';
import type { MultiRateLimitDecision, RateLimitDecision } from '../core/decisions';
import type { RateLimitHeaderStyle } from './rate-limit.options';

/** The headers the guard sends, lowercase: Node's `setHeader` would make a lowercase copy per header and request. */
export const HEADER = {
  limit: 'x-ratelimit-limit',
  remaining: 'x-ratelimit-remaining',
  reset: 'x-ratelimit-reset',
  policy: 'ratelimit-policy',
  rateLimit: 'ratelimit',
  retryAfter: 'retry-after',
  degraded: 'x-ratelimit-degraded',
  shadow: 'x-ratelimit-shadow',
} as const;

/** A limit as the headers name and describe it: its name (or its caller's tier), limit and window. */
export interface NamedRule {
  readonly name: string;
  readonly limit: number;
  readonly windowMs: number;
}

/** Milliseconds to whole seconds, rounded up: a client waiting that long is never early. */
export function toWholeSeconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000));
}

/** `Retry-After` seconds for a rejection: at least 1, since a rejected client must wait. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, toWholeSeconds(retryAfterMs));
}

/** `RateLimit-Policy` value, one entry per limit: `"login";q=5;w=60, "sms-day";q=10;w=86400`. */
export function policyHeaderValue(limits: readonly NamedRule[]): string {
  // Names are restricted to characters that need no escaping inside an sf-string (see limit-name.ts).
  return limits.map((l) => policyEntry(l.name, l.limit, l.windowMs)).join(', ');
}

/** One `RateLimit-Policy` entry; `limit` is the one that applied (an override's, a tier's). */
export function policyEntry(name: string, limit: number, windowMs: number | undefined): string {
  return windowMs === undefined
    ? `"${name}";q=${limit}`
    : `"${name}";q=${limit};w=${Math.max(1, toWholeSeconds(windowMs))}`;
}

/** The limit X-RateLimit-* describe: the fewest remaining, then the longest reset (shadow limits left out). */
export function mostRestrictive(decisions: readonly RateLimitDecision[]): RateLimitDecision | undefined {
  let worst: RateLimitDecision | undefined;
  for (const d of decisions) {
    if (d.shadow) continue;
    if (!worst || d.remaining < worst.remaining || (d.remaining === worst.remaining && d.resetMs > worst.resetMs))
      worst = d;
  }
  return worst;
}

/** `RateLimit-Policy` of one request: the plan's, unless a tier or an override changed a limit. */
function requestPolicy(
  limits: readonly NamedRule[],
  policyHeader: string,
  decisions: readonly RateLimitDecision[],
): string {
  let asConfigured = policyHeader !== '';
  for (let i = 0; i < decisions.length && asConfigured; i++)
    asConfigured = decisions[i].shadow === true || decisions[i].limit === limits[i].limit;
  if (asConfigured) return policyHeader;
  const entries: string[] = [];
  for (let i = 0; i < decisions.length; i++)
    if (!decisions[i].shadow) entries.push(policyEntry(limits[i].name, decisions[i].limit, limits[i].windowMs));
  return entries.join(', ');
}

/** `x-ratelimit-shadow`: per shadow limit, its limit, remaining and whether it would have refused. */
function shadowHeaderValue(limits: readonly NamedRule[], decisions: readonly RateLimitDecision[]): string {
  const entries: string[] = [];
  for (let i = 0; i < decisions.length; i++) {
    const d = decisions[i];
    if (!d.shadow) continue;
    entries.push(
      `"${limits[i].name}";q=${d.limit};r=${Math.max(0, d.remaining)};w=${Math.max(1, toWholeSeconds(limits[i].windowMs))};` +
        `would-refuse=?${d.wouldRefuse ? 1 : 0}`,
    );
  }
  return entries.join(', ');
}

/** Writes one header on a response: the guard's `setHeader` hook. */
export type HeaderWriter = (response: unknown, name: string, value: string) => void;

/**
 * Writes the headers of one decision on `response`, each caller's own limits (a tier's, an override's).
 * Shadow limits stay out (`x-ratelimit-shadow` when `withShadow`). Resets are seconds from now;
 * `Retry-After` (on refusal, whatever the style) is when one more request fits.
 */
export function writeRateLimitHeaders(
  writer: HeaderWriter,
  response: unknown,
  style: RateLimitHeaderStyle,
  limits: readonly NamedRule[],
  policyHeader: string,
  decision: MultiRateLimitDecision,
  withShadow: boolean,
): void {
  const decisions = decision.limits;
  if (style === 'legacy' || style === 'both') {
    const worst = mostRestrictive(decisions);
    if (worst) {
      writer(response, HEADER.limit, String(worst.limit));
      writer(response, HEADER.remaining, String(Math.max(0, worst.remaining)));
      writer(response, HEADER.reset, String(toWholeSeconds(worst.resetMs)));
    }
  }
  if (style === 'draft' || style === 'both') {
    const entries: string[] = [];
    for (let i = 0; i < decisions.length; i++) {
      const d = decisions[i];
      if (!d.shadow) entries.push(`"${limits[i].name}";r=${Math.max(0, d.remaining)};t=${toWholeSeconds(d.resetMs)}`);
    }
    if (entries.length > 0) {
      writer(response, HEADER.policy, requestPolicy(limits, policyHeader, decisions));
      writer(response, HEADER.rateLimit, entries.join(', '));
    }
  }
  if (withShadow) {
    const shadow = shadowHeaderValue(limits, decisions);
    if (shadow !== '') writer(response, HEADER.shadow, shadow);
  }
  if (!decision.allowed) writer(response, HEADER.retryAfter, String(retryAfterSeconds(decision.retryAfterMs)));
}

/** How one header is set on a response of a given kind. */
type HeaderSink = (response: unknown, name: string, value: string) => void;

function setNodeHeader(response: ServerResponse, name: string, value: string): void {
  ServerResponse.prototype.setHeader.call(response, name, value);
}

function callSetHeader(res: OtherResponse, name: string, value: string): void {
  res.setHeader?.(name, value);
}

function callHeader(res: OtherResponse, name: string, value: string): void {
  res.header?.(name, value);
}

/** A response that is not Node's: a Fastify reply (`header`), or one with `setHeader` (HTTP/2 compatibility). */
interface OtherResponse {
  headersSent?: unknown;
  sent?: unknown;
  header?: (name: string, value: string) => unknown;
  setHeader?: (name: string, value: string) => unknown;
}

/** Node's error for a header set once the head has gone. */
function isHeadersSent(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'ERR_HTTP_HEADERS_SENT';
}

/** Sets a header on an Express response or a Fastify reply, if any and not sent yet. */
export function setResponseHeader(response: unknown, name: string, value: string): void {
  const sink = sinkOf(response);
  if (sink === undefined) return;
  try {
    sink(response, name, value);
  } catch (error) {
    if (!isHeadersSent(error)) throw error;
  }
}

/**
 * How headers are set on `response`, or undefined when they cannot be. An Express response is told
 * apart by `instanceof` and nothing is read on it (Express swaps its prototype, so every property read
 * misses V8's caches); a Fastify reply has `header()`, others `setHeader`.
 */
function sinkOf(response: unknown): HeaderSink | undefined {
  if (typeof response !== 'object' || response === null) return undefined;
  if (response instanceof ServerResponse) return setNodeHeader as HeaderSink;
  const res = response as OtherResponse;
  if (res.headersSent === true || res.sent === true) return undefined;
  if (typeof res.setHeader === 'function') return callSetHeader as HeaderSink;
  if (typeof res.header === 'function') return callHeader as HeaderSink;
  return undefined;
}
