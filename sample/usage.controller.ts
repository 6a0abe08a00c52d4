import { Controller, Get, Req } from '@nestjs/common';
import { RateLimitUsage, SkipRateLimit, type RateLimitRequest, type RateLimitUsageReport } from 'nestjs-sliding-limit';

/** The limits keyed by the caller's API key: a caller reads its own usage, and nobody else's. */
const API_KEY_LIMITS = ['api-quota', 'reports', 'reports.candidate'];

@Controller('rate_limit')
export class UsageController {
  constructor(private readonly usage: RateLimitUsage) {}

  /**
   * The caller's API-key limits as its headers say them, read without counting. Not `usage: true`
   * (every named limit): the SMS limits are keyed by a phone number in the body, which any caller
   * could name, and would tell anyone whether a number was sent a code.
   */
  @Get()
  @SkipRateLimit()
  report(@Req() request: RateLimitRequest): Promise<RateLimitUsageReport> {
    return this.usage.of(request, { names: API_KEY_LIMITS });
  }
}
