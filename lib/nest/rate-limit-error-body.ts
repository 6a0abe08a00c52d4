import { HttpStatus } from '@nestjs/common';
import { TOO_MANY_REQUESTS_MESSAGE, type TooManyRequestsDetails } from './too-many-requests.exception';
import type { RateLimitErrorBodyStyle } from './rate-limit.options';

/** Content type of an RFC 9457 problem details body. */
export const PROBLEM_JSON = 'application/problem+json';

/** The body of a 429 in the configured style: Nest's `{ statusCode, message, error }` or an RFC 9457 problem. */
export function tooManyRequestsBody(
  style: RateLimitErrorBodyStyle,
  details: TooManyRequestsDetails,
): string | Record<string, unknown> {
  if (style === 'nest') return TOO_MANY_REQUESTS_MESSAGE;
  return {
    type: 'about:blank',
    title: TOO_MANY_REQUESTS_MESSAGE,
    status: HttpStatus.TOO_MANY_REQUESTS,
    detail: `Rate limit exceeded; retry in ${details.retryAfterSeconds} second${details.retryAfterSeconds === 1 ? '' : 's'}.`,
  };
}
