import { HttpStatus } from '@nestjs/common';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { HandlerPlan } from './limit-plan';
import { retryAfterSeconds } from './rate-limit-headers';
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
  /** Names of the limits that were full (429 only). */
  limits?: string[];
  /** WebSockets: the message (event) refused, so a client tells which of its messages it answers. */
  event?: string;
}

/** The 429: which limits were full and when to retry. */
export function tooManyRequestsPayload(decision: MultiRateLimitDecision, plan: HandlerPlan): RateLimitErrorPayload {
  return {
    status: HttpStatus.TOO_MANY_REQUESTS,
    code: 'TOO_MANY_REQUESTS',
    message: TOO_MANY_REQUESTS_MESSAGE,
    retryAfter: retryAfterSeconds(decision.retryAfterMs),
    retryAfterMs: decision.retryAfterMs,
    limits: plan.limits.filter((_, i) => !decision.limits[i]?.allowed).map((limit) => limit.name),
  };
}

/** Redis could not decide and the policy is `deny`: the server's fault, retry shortly. */
export function unavailablePayload(decision: MultiRateLimitDecision): RateLimitErrorPayload {
  return {
    status: HttpStatus.SERVICE_UNAVAILABLE,
    code: 'RATE_LIMIT_UNAVAILABLE',
    message: 'Rate limiting is unavailable; retry shortly',
    retryAfter: retryAfterSeconds(decision.retryAfterMs),
    retryAfterMs: decision.retryAfterMs,
  };
}

/** The handler's cost function threw or gave no valid price; nothing was counted. */
export function unpriceablePayload(plan: HandlerPlan): RateLimitErrorPayload {
  return {
    status: HttpStatus.BAD_REQUEST,
    code: 'RATE_LIMIT_UNPRICEABLE',
    message: `Rate limit of ${plan.route} cannot price this call`,
  };
}

/** No key value and no client address: refused rather than counted in a bucket shared by everyone. */
export function unidentifiedPayload(plan: HandlerPlan): RateLimitErrorPayload {
  return {
    status: HttpStatus.FORBIDDEN,
    code: 'RATE_LIMIT_UNIDENTIFIED',
    message: `Rate limit of ${plan.route} cannot identify the caller`,
  };
}
