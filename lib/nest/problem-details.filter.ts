import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { TooManyRequestsException } from '../errors/too-many-requests.exception';
import { PROBLEM_JSON } from './rate-limit-error-body';

/**
 * Sends a 429 as `application/problem+json` (module option `errorBody: 'problem'`). Needed because
 * Nest's Express adapter resets a non-JSON content type on error bodies; a serialized string body
 * keeps the type on Express and Fastify alike.
 */
@Catch(TooManyRequestsException)
export class ProblemDetailsFilter implements ExceptionFilter<TooManyRequestsException> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: TooManyRequestsException, host: ArgumentsHost): unknown {
    // GraphQL and other transports take the exception back (returned, as their filters expect).
    if (host.getType() !== 'http') return exception;
    const adapter = this.adapterHost.httpAdapter;
    const response: unknown = host.switchToHttp().getResponse();
    adapter.setHeader(response, 'Content-Type', PROBLEM_JSON);
    adapter.reply(response, JSON.stringify(exception.getResponse()), exception.getStatus());
    return undefined;
  }
}

/** Never thrown; lets the module's APP_FILTER factory register a filter that catches nothing. */
class NeverThrown {}

/** The filter registered when `errorBody` is `'nest'`: it matches nothing, so Nest's own filters answer. */
@Catch(NeverThrown)
export class InertFilter implements ExceptionFilter {
  catch(): void {}
}
