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

/**
 * The `HttpException` that answers a refusal over HTTP (and any transport whose guard does not say
 * otherwise): a {@link TooManyRequestsException} with its body in the module's style, a 503, a 400 or
 * a 403, each with the refusal's message.
 */
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
