import { Controller, Get, Headers } from '@nestjs/common';
import { SlidingLimit } from 'nestjs-sliding-limit';
import { ApiKeyPlans, type Plan } from './api-key-plans.service';
import { PlanPolicy } from './plan.policy';

@Controller('reports')
export class ReportsController {
  constructor(private readonly plans: ApiKeyPlans) {}

  /**
   * Per API key (key rl:reports:{header.x-api-key:<key>}), as its plan says: free 10 per minute,
   * pro 100 (PlanPolicy). Beside it, a candidate of 5 per minute counts in keys of its own and never
   * refuses: the `x-ratelimit-shadow` header says whether it would have.
   */
  @Get()
  @SlidingLimit({
    name: 'reports',
    policy: PlanPolicy,
    windowMs: 60_000,
    key: 'header:x-api-key',
    candidate: { limit: 5 },
  })
  list(@Headers('x-api-key') apiKey?: string): { plan: Plan; reports: string[] } {
    return { plan: this.plans.planOf(apiKey), reports: [] };
  }
}
