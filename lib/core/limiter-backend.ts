import type { FunctionContract } from './function-contract';
import type { LuaRunner } from './lua-runner';
import type { LoadFunctionsPolicy } from './lua-runner';

/** The few plain commands the limiter sends besides its functions (ioredis clients have them all). */
export interface KeyCommands {
  del(key: string): Promise<unknown>;
  zrem(key: string, member: string): Promise<unknown>;
  zcount(key: string, min: string, max: string): Promise<unknown>;
  time(): Promise<unknown>;
}

/**
 * Where decisions run: Redis (functions or scripts), or an in-memory store with the same contract
 * (tests, and the per-process insurance while Redis is unreachable).
 */
export interface LimiterBackend {
  readonly commands: KeyCommands;
  /** True on a Redis Cluster: one call may only touch keys of one slot. */
  readonly clustered: boolean;
  /** False while the connection is down: calls then fail fast instead of waiting in a queue. */
  isConnected(): boolean;
  /** The node serving `key` (a cluster master's address), so failures are tracked per node. */
  nodeOf?(key: string): string;
  /** Calls `listener` whenever the connection becomes ready again; returns a function that stops it. */
  onReady(listener: () => void): () => void;
  /** A runner for one function version, made ready per `policy` (load, verify or trust). */
  runnerFor(contract: FunctionContract, policy: LoadFunctionsPolicy): Promise<LuaRunner>;
}
