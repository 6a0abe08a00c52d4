// Small pieces the consume() and fcall loops share: how a decision counts, and the members a
// hand-written fcall sends.
import { randomBytes } from 'node:crypto';

/** What a decision of ours counts as: admitted, rejected, or decided without Redis (fallback policy). */
export function outcomeOf(decision) {
  return decision.degraded ? 'degraded' : decision.allowed;
}

/** A source of short members unique to this run, for fcalls made without the limiter. */
export function memberSource() {
  const prefix = randomBytes(6).toString('base64url');
  let counter = 0;
  return () => prefix + (counter++).toString(36);
}
