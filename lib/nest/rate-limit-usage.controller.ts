import { Controller, Get, Logger, Req, Res, type OnApplicationBootstrap, type Type } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { SkipRateLimit } from './sliding-limit.decorator';
import type { RateLimitRequest } from './rate-limit-key';
import { RateLimitUsage, type RateLimitUsageReport } from './rate-limit-usage';

/** Where the ready usage endpoint answers unless `usage.path` says otherwise. */
export const DEFAULT_USAGE_PATH = 'rate_limit';

/**
 * The ready usage endpoint (`GET /rate_limit`, the module's `usage` option): the caller's named limits
 * as {@link RateLimitUsage} reports them, counted against none. Without `names`, only the limits keyed
 * by the caller's identity.
 */
export function usageController(path: string = DEFAULT_USAGE_PATH, names?: readonly string[]): Type {
  @Controller(path)
  class RateLimitUsageController implements OnApplicationBootstrap {
    private reported = names ?? [];

    constructor(private readonly usage: RateLimitUsage) {}

    /** Without `usage.names`: the callers' own limits, chosen once the plans are built. */
    onApplicationBootstrap(): void {
      const { names: own, leftOut } = this.usage.callersOwnNames();
      if (names) {
        // A name no route has reports nothing, silently: a typo would look like an empty quota.
        const unknown = names.filter((name) => !own.includes(name) && !leftOut.includes(name));
        if (unknown.length > 0) {
          new Logger('RateLimitUsage').warn(
            `GET /${path}: usage.names ${unknown.map((name) => `"${name}"`).join(', ')} name no @SlidingLimit ` +
              `of this application, so it reports nothing for them (named limits: ${[...own, ...leftOut].join(', ')})`,
          );
        }
        return;
      }
      this.reported = own;
      if (leftOut.length > 0) {
        new Logger('RateLimitUsage').log(
          `GET /${path} leaves out ${leftOut.map((name) => `"${name}"`).join(', ')}: any caller can name their ` +
            'keys (a body, query or route value), so they would show anyone the usage of others; list the ' +
            'names to report in RateLimitModule.forRoot({ usage: { names } }) to report them anyway',
        );
      }
    }

    @Get()
    @SkipRateLimit()
    report(
      @Req() request: RateLimitRequest,
      @Res({ passthrough: true }) response: unknown,
    ): Promise<RateLimitUsageReport> {
      // The handler is what a key function's context.getHandler() sees; it is never called from there.
      // eslint-disable-next-line @typescript-eslint/unbound-method
      const context = new ExecutionContextHost([request, response], RateLimitUsageController, this.report);
      return this.usage.of(request, { context, names: this.reported });
    }
  }
  return RateLimitUsageController;
}
