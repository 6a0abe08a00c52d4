import { Controller, Get, Req, Res, type Type } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { SkipRateLimit } from './sliding-limit.decorator';
import type { RateLimitRequest } from './rate-limit-key';
import { RateLimitUsage, type RateLimitUsageReport } from './rate-limit-usage';

/** Where the ready usage endpoint answers unless `usage.path` says otherwise. */
export const DEFAULT_USAGE_PATH = 'rate_limit';

/**
 * The ready usage endpoint (`GET /rate_limit`), added by `RateLimitModule.forRoot({ …, usage: true })`:
 * the caller's named limits, as {@link RateLimitUsage} reports them. It counts against no limit (a
 * client polling its quota must not use it up), and reads only — `FCALL_RO`.
 */
export function usageController(path: string = DEFAULT_USAGE_PATH): Type {
  @Controller(path)
  class RateLimitUsageController {
    constructor(private readonly usage: RateLimitUsage) {}

    @Get()
    @SkipRateLimit()
    report(
      @Req() request: RateLimitRequest,
      @Res({ passthrough: true }) response: unknown,
    ): Promise<RateLimitUsageReport> {
      // The handler is what a key function's context.getHandler() sees; it is never called from there.
      // eslint-disable-next-line @typescript-eslint/unbound-method
      const context = new ExecutionContextHost([request, response], RateLimitUsageController, this.report);
      return this.usage.of(request, { context });
    }
  }
  return RateLimitUsageController;
}
