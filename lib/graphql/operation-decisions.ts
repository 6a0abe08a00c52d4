import type { HandlerPlan } from 'nestjs-sliding-limit';

/** Decisions of one GraphQL operation per plan and field path: the first call of a field decides for all. */
const decisions = new WeakMap<object, Map<HandlerPlan, Map<string, Promise<boolean>>>>();

/** The outcome for `path` in this operation: `decide()`'s, called on the first request for it only. */
export function decideOncePerField(
  operation: object,
  plan: HandlerPlan,
  path: string,
  decide: () => Promise<boolean>,
): Promise<boolean> {
  let byPlan = decisions.get(operation);
  if (!byPlan) decisions.set(operation, (byPlan = new Map<HandlerPlan, Map<string, Promise<boolean>>>()));
  let byPath = byPlan.get(plan);
  if (!byPath) byPlan.set(plan, (byPath = new Map<string, Promise<boolean>>()));
  const known = byPath.get(path);
  if (known) return known;
  let decision: Promise<boolean>;
  try {
    decision = decide();
  } catch (error) {
    decision = Promise.reject(error);
  }
  byPath.set(path, decision);
  return decision;
}
