import { HttpStatus } from '@nestjs/common';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { HandlerPlan } from './limit-plan';
import { policyEntry, retryAfterSeconds, type NamedRule } from './rate-limit-headers';
import { TOO_MANY_REQUESTS_MESSAGE } from './too-many-requests.exception';

/**
 * Why a call was refused, as transports without HTTP status lines carry it (`WsException`,
 * `RpcException`): the code tells the cases apart, `status` is the HTTP status a REST client would get.
 */
export type RateLimitErrorCode =
  'TOO_MANY_REQUESTS' | 'RATE_LIMIT_UNAVAILABLE' | 'RATE_LIMIT_UNPRICEABLE' | 'RATE_LIMIT_UNIDENTIFIED';

/** The error object a WebSocket or microservice client receives when a rate limit refuses its call. */
export interface RateLimitErrorPayload {
  /** 429 (limited), 503 (Redis could not decide and the policy denies), 400 (unpriceable), 403 (unidentified). */
  status: number;
  /** Which refusal this is; see {@link RateLimitErrorCode}. */
  code: RateLimitErrorCode;
  /** A short English sentence for logs and people. */
  message: string;
  /** Whole seconds after which a retry can be admitted (429 and 503 only). */
  retryAfter?: number;
  /** Milliseconds after which a retry can be admitted, as the limiter computed it (429 and 503 only). */
  retryAfterMs?: number;
  /** Names of the limits that were full (429 only); shadow limits refuse nothing and are never among them. */
  limits?: string[];
  /**
   * The full limits as the caller's own, in `RateLimit-Policy` form (429 only): `"free.api-minute";q=3;w=60`,
   * for transports without headers.
   */
  policy?: string;
  /** WebSockets: the message (event) refused, so a client tells which of its messages it answers. */
  event?: string;
}

/** The 429: which limits were full and when to retry; `named`: the caller's names for its limits. */
export function tooManyRequestsPayload(
  decision: MultiRateLimitDecision,
  plan: HandlerPlan,
  named?: readonly NamedRule[],
): RateLimitErrorPayload {
  const refused = refusingLimits(decision);
  return {
    status: HttpStatus.TOO_MANY_REQUESTS,
    code: 'TOO_MANY_REQUESTS',
    message: TOO_MANY_REQUESTS_MESSAGE,
    retryAfter: retryAfterSeconds(decision.retryAfterMs),
    retryAfterMs: decision.retryAfterMs,
    limits: refusedNames(decision, plan, refused),
    policy: refusedPolicy(decision, refused, named ?? (plan.limits as readonly NamedRule[])),
  };
}

/** Indices of the enforced limits that refused a decision: a shadow limit (a candidate) refuses nothing. */
export function refusingLimits(decision: MultiRateLimitDecision): number[] {
  const refused: number[] = [];
  for (let i = 0; i < decision.limits.length; i++) {
    const limit = decision.limits[i];
    if (!limit.allowed && limit.shadow === undefined) refused.push(i);
  }
  return refused;
}

/** Names of the enforced limits that refused a decision (`refused`, when already known, spares a pass). */
export function refusedNames(
  decision: MultiRateLimitDecision,
  plan: HandlerPlan,
  refused: readonly number[] = refusingLimits(decision),
): string[] {
  return refused.map((i) => plan.limits[i].name);
}

/** `RateLimit-Policy` entries of the `refused` limits, named as the caller's and with the limits that applied. */
export function refusedPolicy(
  decision: MultiRateLimitDecision,
  refused: readonly number[],
  named: readonly NamedRule[],
): string {
  // A policy's limit known by the plan alone has no window (the guard passes the request's): no `w`.
  return refused.map((i) => policyEntry(named[i].name, decision.limits[i].limit, named[i].windowMs)).join(', ');
}

/** Message of a refusal because Redis could not decide under the `deny` policy. */
export const RATE_LIMIT_UNAVAILABLE_MESSAGE = 'Rate limiting is unavailable; retry shortly';

/** Redis could not decide and the policy is `deny`: the server's fault, retry shortly. */
export function unavailablePayload(decision: MultiRateLimitDecision): RateLimitErrorPayload {
  return {
    status: HttpStatus.SERVICE_UNAVAILABLE,
    code: 'RATE_LIMIT_UNAVAILABLE',
    message: RATE_LIMIT_UNAVAILABLE_MESSAGE,
    retryAfter: retryAfterSeconds(decision.retryAfterMs),
    retryAfterMs: decision.retryAfterMs,
  };
}

/** The handler's cost function threw or gave no valid price; nothing was counted. */
export function unpriceablePayload(plan: HandlerPlan): RateLimitErrorPayload {
  return {
    status: HttpStatus.BAD_REQUEST,
    code: 'RATE_LIMIT_UNPRICEABLE',
    message: `Rate limit of ${plan.route} cannot price this request`,
  };
}

/** No key value and no client address: refused rather than counted in a bucket shared by everyone. */
export function unidentifiedPayload(plan: HandlerPlan): RateLimitErrorPayload {
  return {
    status: HttpStatus.FORBIDDEN,
    code: 'RATE_LIMIT_UNIDENTIFIED',
    message: `Rate limit of ${plan.route} cannot identify the client`,
  };
}
