import type { ExecutionContext } from '@nestjs/common';
import type { SlidingLimitRule } from '../core/limit-rule';
import { messageOf } from '../redis/reply';
import type { HandlerPlan } from './limit-plan';
import { describeRuntimeCostProblem } from './rate-limit-cost';
import type { RateLimitRequest } from './rate-limit-key';

/** Why a request has no price: the guard refuses it (a 400), counting nothing. */
export interface Unpriced {
  readonly unpriced: string;
}

/** Prices requests whose cost is not static; one that cannot be priced is refused, the reason logged once per route. */
export class RequestCosts {
  private readonly warned = new WeakSet<HandlerPlan>();

  constructor(private readonly warn: (line: string) => void) {}

  /** The price of a request whose limits are `rules`: `given` (a policy's), else the route's cost function's. */
  async priceOf(
    plan: HandlerPlan,
    request: RateLimitRequest,
    context: ExecutionContext,
    rules: readonly SlidingLimitRule[],
    given?: number,
  ): Promise<number | Unpriced> {
    if (given !== undefined) {
      const problem = describeRuntimeCostProblem(given, rules);
      return problem === undefined ? given : this.unpriced(plan, `its policy's cost: ${problem}`);
    }
    let price: unknown;
    try {
      price = await (plan.costFunction as NonNullable<HandlerPlan['costFunction']>)(request, context);
    } catch (error) {
      return this.unpriced(plan, `its cost function threw: ${messageOf(error)}`);
    }
    const problem = describeRuntimeCostProblem(price, rules);
    return problem === undefined ? (price as number) : this.unpriced(plan, problem);
  }

  private unpriced(plan: HandlerPlan, reason: string): Unpriced {
    if (!this.warned.has(plan)) {
      this.warned.add(plan);
      this.warn(`${plan.route} cannot price a request (answered 400; said once per route): ${reason}`);
    }
    return { unpriced: reason };
  }
}
