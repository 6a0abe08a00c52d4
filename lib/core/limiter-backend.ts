import type { FunctionContract } from './function-contract';
import type { OverrideStore } from './key-overrides';
import type { LuaRunner } from './lua-runner';
import type { LoadFunctionsPolicy } from './lua-runner';

/** The few plain commands the limiter sends besides its functions (ioredis clients have them all). */
export interface KeyCommands {
  del(key: string): Promise<unknown>;
  zrem(key: string, member: string): Promise<unknown>;
  zcount(key: string, min: string, max: string): Promise<unknown>;
  time(): Promise<unknown>;
}

/** Where decisions run: Redis (functions or scripts), or an in-memory store with the same contract. */
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
  /** Calls `listener` whenever a runner reloaded its library on a server that had lost it; returns the stop. */
  onReload?(listener: (reload: LibraryReload) => void): () => void;
  /** The per-key overrides of the keys under `keyPrefix`, kept where this backend's functions read them. */
  overridesStore(options: OverridesStoreSettings): OverrideStore;
  /** Tells `listener` every override change made through any store on this backend; returns the stop. */
  watchOverrides?(listener: OverrideChangeListener): () => void;
}

/** What hears of override changes: the block cache. */
export interface OverrideChangeListener {
  /** The override of `key` (with its prefix) was set or deleted. */
  changed(key: string): void;
  /** Whether every change reaches the listener from now on; false when some may be lost. */
  watching(on: boolean): void;
}

/** What a backend's {@link LimiterBackend.overridesStore} is given: the limiter's own settings. */
export interface OverridesStoreSettings {
  /** The limiter's key prefix: keys are given to the store without it. */
  readonly keyPrefix: string;
  /** The limiter's clock (epoch ms), which dates an override's `createdAt` unless the store has its own. */
  readonly clock: () => number;
}

/** A library loaded again after a call found it missing on a server that had lost it: what the limiter logs. */
export interface LibraryReload {
  readonly libraryName: string;
  /** The function the call asked for. */
  readonly functionName: string;
  /** The masters it was loaded on, as host:port. */
  readonly nodes: readonly string[];
  /** The limiter's `loadFunctions` under which it was reloaded: `auto` or `verify`. */
  readonly policy: LoadFunctionsPolicy;
}
