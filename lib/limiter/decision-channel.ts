import type { KeyCommands } from '../core/limiter-backend';
import type { RedisCall } from './redis-call-policy';

/** Where decisions are sent: the store's commands and how a call to it is made. */
export interface DecisionChannel {
  readonly commands: KeyCommands;
  /** True on a Redis Cluster: one call may only touch keys of one slot. */
  readonly clustered: boolean;
  /**
   * Makes one call (with timeouts, retries and a circuit breaker, for Redis) and tells it how it
   * ended; `routeKey` is one of its keys, `decisions` how many decisions it carries (default 1).
   */
  send<T>(call: RedisCall<T>, routeKey: string, decisions?: number): void;
  /** A call given as a function, off the decision path: the promise of its reply. */
  run<T>(run: () => Promise<T>, routeKey: string): Promise<T>;
  /**
   * Whether calls to the node of `routeKey` go through normally. While it fails (a circuit breaker
   * open or probing), decisions go one per call, so that a probe holds one decision, not a batch.
   */
  healthy(routeKey: string): boolean;
  /** Whether calls are in flight: decisions that arrive meanwhile wait to go in a batch. */
  busy(): boolean;
}
