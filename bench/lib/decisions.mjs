// Small pieces the loops share: how a decision counts, the members a hand-written fcall sends, and
// the bare FCALL every "bare FCALL" row measures the package against.
import { randomBytes } from 'node:crypto';

/**
 * The function of the bare FCALLs: the article's `sliding_allow_v1` (library rate_limit_v1), the one a
 * team would load by hand and call itself, the reference the package's decisions are compared with.
 */
export const BARE_FUNCTION = 'sliding_allow_v1';

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

/**
 * One bare FCALL on `client` (an ioredis client, cluster or pipeline):
 * `FCALL sliding_allow_v1 1 <key> <now_ms> <window_ms> <limit> <member>`, replying `[allowed, remaining]`.
 */
export function bareFcall(client, key, nowMs, { windowMs, limit }, member) {
  return client.fcall(BARE_FUNCTION, 1, key, nowMs, windowMs, limit, member);
}

/** Whether a bare FCALL's reply admitted the request. */
export function bareAdmitted(reply) {
  return reply[0] === 1;
}

/**
 * Loads the library of `functionName` on every master behind `client`, if missing, the way an
 * application does: a limiter configured for it, started and closed.
 */
export async function loadFunction(SlidingWindowLimiter, client, functionName) {
  const limiter = new SlidingWindowLimiter({ client, functionName });
  await limiter.init();
  await limiter.close();
}
