import { HttpException, HttpStatus } from '@nestjs/common';

/** Message of a 429 when none is given: the HTTP reason phrase, like Nest's own exceptions. */
export const TOO_MANY_REQUESTS_MESSAGE = 'Too Many Requests';

/** What a rejected request was told, for exception filters and logs. */
export interface TooManyRequestsDetails {
  /** Whole seconds after which a retry can be admitted (the `Retry-After` value). */
  retryAfterSeconds: number;
  /** Milliseconds after which a retry can be admitted, as the limiter computed it. */
  retryAfterMs: number;
  /** Names of the limits that were full. */
  limits: string[];
}

/**
 * The 429 thrown by {@link SlidingLimitGuard}. An `HttpException`, so Nest's exception filters answer
 * it on any platform; `details` keeps the numbers for custom filters (WebSocket or GraphQL adapters).
 *
 * By default the body is shaped like Nest's built-in exceptions:
 * `{ "statusCode": 429, "message": "Too Many Requests", "error": "Too Many Requests" }`.
 */
export class TooManyRequestsException extends HttpException {
  constructor(
    readonly details: TooManyRequestsDetails,
    body: string | Record<string, unknown> = TOO_MANY_REQUESTS_MESSAGE,
  ) {
    super(
      typeof body === 'string'
        ? { statusCode: HttpStatus.TOO_MANY_REQUESTS, message: body, error: TOO_MANY_REQUESTS_MESSAGE }
        : body,
      HttpStatus.TOO_MANY_REQUESTS,
    );
  }
}
