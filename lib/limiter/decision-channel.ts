import type { KeyCommands } from '../core/limiter-backend';
import type { CallSettlers, RedisAttempt } from './redis-call-policy';

/** Where decisions are sent: the store's commands and how a call to it is made. */
export interface DecisionChannel {
  readonly commands: KeyCommands;
  /** True on a Redis Cluster: one call may only touch keys of one slot. */
  readonly clustered: boolean;
  /**
   * Runs one call (with timeouts, retries and a circuit breaker, for Redis); `routeKey` is one of its
   * keys, `decisions` how many decisions it carries (default 1).
   */
  call<T>(attempt: RedisAttempt<T>, routeKey: string, decisions?: number): Promise<T>;
  /** The same call, telling `settlers` how it ended instead of returning a promise. */
  callInto<T>(attempt: RedisAttempt<T>, settlers: CallSettlers<T>, routeKey: string, decisions?: number): void;
  /**
   * Whether calls to the node of `routeKey` go through normally. While it fails (a circuit breaker
   * open or probing), decisions go one per call, so that a probe holds one decision, not a batch.
   */
  healthy(routeKey: string): boolean;
}
