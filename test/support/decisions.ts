import type { MultiRateLimitDecision, SlidingWindowLimiter } from '../../lib';
import type { DecisionReceiver } from '../../lib/limiter/decision';
import { DECIDE_PLANNED } from '../../lib/limiter/planned-entry';

type PlannedEntry = (keys: string[], rules: unknown, options: unknown, receiver: DecisionReceiver) => Promise<unknown>;

/**
 * Makes `limiter` answer every decision with `decision` — on the guards' own entry and on
 * `consumeAll` — for tests of how a guard answers a decision it cannot get from Redis on demand (a
 * degraded denial with a given wait, say). Undone by `jest.restoreAllMocks()`.
 */
export function answerEveryDecision(limiter: SlidingWindowLimiter, decision: MultiRateLimitDecision): void {
  jest.spyOn(limiter, 'consumeAll').mockResolvedValue(decision);
  const entries = limiter as unknown as Record<typeof DECIDE_PLANNED, PlannedEntry>;
  jest
    .spyOn(entries, DECIDE_PLANNED)
    .mockImplementation((_keys, _rules, _options, receiver) =>
      Promise.resolve().then(() => receiver.receive(decision)),
    );
}

/** Counts the decisions `limiter` makes from now on, by its listeners (every entry: the guards' too). */
export function countDecisions(limiter: SlidingWindowLimiter): { readonly count: number } {
  const counter = { count: 0 };
  limiter.onDecision(() => counter.count++);
  return counter;
}
