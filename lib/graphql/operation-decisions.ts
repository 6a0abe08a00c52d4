import type { HandlerPlan } from '../nest/limit-plan';

/**
 * Decisions taken during one GraphQL operation, per plan and field path, shared by every guard
 * instance. Resolvers of one field run once per parent object, often concurrently: the first call
 * decides and the others wait for its outcome, so a field counts once per operation and its siblings
 * are admitted or rejected together. A WeakMap keyed by an object of the execution: nothing outlives it.
 */
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
