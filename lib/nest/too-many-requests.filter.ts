import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { TooManyRequestsException } from './too-many-requests.exception';
import type { RateLimitErrorBodyStyle } from './rate-limit.options';
import { PROBLEM_JSON, tooManyRequestsBody } from './rate-limit-error-body';
import { HEADER } from './rate-limit-headers';
import { RateLimitRefusal } from './rate-limit-refusal';

/**
 * Answers every {@link TooManyRequestsException} over HTTP — the guard's and those an application
 * throws itself (e.g. after `limiter.peek`) — with a `Retry-After` header and the configured body:
 * Nest's `{ statusCode, message, error }`, or RFC 9457 `application/problem+json`. The body is sent as
 * a serialized string so the content type survives on Express (whose adapter resets non-JSON types on
 * error bodies) and Fastify alike.
 *
 * Elsewhere it hands the exception back, as GraphQL expects of a filter; so do the refusals of the
 * GraphQL guard (marked {@link RateLimitRefusal}), which Nest would otherwise log as errors.
 */
@Catch(TooManyRequestsException, RateLimitRefusal)
export class TooManyRequestsFilter implements ExceptionFilter<TooManyRequestsException | RateLimitRefusal> {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly style: RateLimitErrorBodyStyle,
  ) {}

  catch(exception: TooManyRequestsException | RateLimitRefusal, host: ArgumentsHost): unknown {
    // GraphQL and other transports take the exception back (returned, as their filters expect).
    if (!(exception instanceof TooManyRequestsException) || host.getType() !== 'http') return exception;
    const adapter = this.adapterHost.httpAdapter;
    const response: unknown = host.switchToHttp().getResponse();
    adapter.setHeader(response, HEADER.retryAfter, String(exception.details.retryAfterSeconds));
    if (this.style === 'problem') {
      const body = exception.getResponse();
      const problem =
        typeof body === 'object' && body !== null && 'type' in body
          ? body
          : tooManyRequestsBody('problem', exception.details);
      adapter.setHeader(response, 'Content-Type', PROBLEM_JSON);
      adapter.reply(response, JSON.stringify(problem), exception.getStatus());
    } else {
      adapter.reply(response, exception.getResponse(), exception.getStatus());
    }
    return undefined;
  }
}
