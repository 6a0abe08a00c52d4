import {
  BadRequestException,
  ForbiddenException,
  ServiceUnavailableException,
  type HttpException,
} from '@nestjs/common';
import type { RateLimitErrorPayload } from './rate-limit-error-payload';
import { tooManyRequestsBody } from './rate-limit-error-body';
import type { RateLimitErrorBodyStyle } from './rate-limit.options';
import { TooManyRequestsException } from './too-many-requests.exception';

/** The `HttpException` of a refusal: a {@link TooManyRequestsException} in the module's style, a 503, 400 or 403. */
export function httpRefusal(refusal: RateLimitErrorPayload, errorBody: RateLimitErrorBodyStyle): HttpException {
  switch (refusal.code) {
    case 'TOO_MANY_REQUESTS': {
      const details = {
        retryAfterSeconds: refusal.retryAfter as number,
        retryAfterMs: refusal.retryAfterMs as number,
        limits: refusal.limits as string[],
      };
      return new TooManyRequestsException(details, tooManyRequestsBody(errorBody, details));
    }
    case 'RATE_LIMIT_UNAVAILABLE':
      return new ServiceUnavailableException(refusal.message);
    case 'RATE_LIMIT_UNPRICEABLE':
      return new BadRequestException(refusal.message);
    case 'RATE_LIMIT_UNIDENTIFIED':
      return new ForbiddenException(refusal.message);
  }
}
