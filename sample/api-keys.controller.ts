import { BadRequestException, Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiKeyPlans, isPlan, type Plan } from './api-key-plans.service';

/** Stand-in for the team's billing: moves an API key to another plan (unguarded: a sample only). */
@Controller('api-keys')
export class ApiKeysController {
  constructor(private readonly plans: ApiKeyPlans) {}

  /** The key's next request gets the new plan's limit, with its history in the window kept. */
  @Post(':apiKey/plan')
  @HttpCode(200)
  setPlan(@Param('apiKey') apiKey: string, @Body() body: unknown): { apiKey: string; plan: Plan } {
    const plan = (body as { plan?: unknown } | undefined)?.plan;
    if (!isPlan(plan)) throw new BadRequestException('Send a JSON body with "plan": "free" or "pro"');
    this.plans.setPlan(apiKey, plan);
    return { apiKey, plan };
  }
}
