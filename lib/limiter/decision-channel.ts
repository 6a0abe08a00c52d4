import type { KeyCommands } from '../core/limiter-backend';
import type { RedisCall } from './redis-call-policy';

/** Where decisions are sent: the store's commands and how a call to it is made. */
export interface DecisionChannel {
  readonly commands: KeyCommands;
  /** True on a Redis Cluster: one call may only touch keys of one slot. */
  readonly clustered: boolean;
  /** Makes one call carrying `decisions` decisions (default 1) and tells it how it ended. */
  send<T>(call: RedisCall<T>, routeKey: string, decisions?: number): void;
  /** A call given as a function, off the decision path: the promise of its reply. */
  run<T>(run: () => Promise<T>, routeKey: string): Promise<T>;
  /** Whether the node of `routeKey` works normally; while it fails, decisions go one per call, never a batch. */
  healthy(routeKey: string): boolean;
  /** Whether calls are in flight: decisions that arrive meanwhile wait to go in a batch. */
  busy(): boolean;
}
