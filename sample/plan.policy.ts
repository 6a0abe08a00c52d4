import { Injectable } from '@nestjs/common';
import type { RateLimitPolicy, RateLimitPolicyResult, RateLimitRequest } from 'nestjs-sliding-limit';
import { ApiKeyPlans } from './api-key-plans.service';

/**
 * Each API key's limit from its plan: free 10 per minute, pro 100 (small numbers, so a few curls
 * show them). Resolved once per request; the tier's name is what `RateLimit-Policy` calls the limit.
 */
@Injectable()
export class PlanPolicy implements RateLimitPolicy {
  constructor(private readonly plans: ApiKeyPlans) {}

  resolve(request: RateLimitRequest): RateLimitPolicyResult {
    const apiKey = (request.headers as Record<string, string | undefined>)['x-api-key'];
    return this.plans.planOf(apiKey) === 'pro' ? { name: 'pro', limit: 100 } : { name: 'free', limit: 10 };
  }
}
