import { Injectable } from '@nestjs/common';

/** The plans an API key can be on. */
export type Plan = 'free' | 'pro';

/** Whether `value` names a plan (for input from a request body). */
export function isPlan(value: unknown): value is Plan {
  return value === 'free' || value === 'pro';
}

/**
 * Which plan each API key is on: the team's own service (a database table in a real app, a map
 * here). Keys it does not know are on the free plan. The limits read it on every request, so a
 * change applies to the key's next request.
 */
@Injectable()
export class ApiKeyPlans {
  private readonly plans = new Map<string, Plan>([
    ['demo-free', 'free'],
    ['demo-pro', 'pro'],
  ]);

  planOf(apiKey: string | undefined): Plan {
    return (apiKey !== undefined && this.plans.get(apiKey)) || 'free';
  }

  setPlan(apiKey: string, plan: Plan): void {
    this.plans.set(apiKey, plan);
  }
}
