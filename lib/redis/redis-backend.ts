import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis } from 'ioredis';
import type {
  KeyCommands,
  LibraryReload,
  LimiterBackend,
  OverrideChangeListener,
  OverridesStoreSettings,
} from '../core/limiter-backend';
import type { OverrideStore } from '../core/key-overrides';
import type { ExecutionMode, LoadFunctionsPolicy } from '../core/lua-runner';
import type { RedisConnection } from '../core/redis-connection';
import type { FunctionContract } from '../core/function-contract';
import { FunctionRunner } from './function-runner';
import { watchOverrideChanges } from './override-changes';
import { RedisOverridesStore } from './overrides-store';
import type { LuaRunner } from '../core/lua-runner';
import { isCluster, masterNodes } from './redis-nodes';
import { onClientReady } from './ready-listeners';
import { ScriptRunner } from './script-runner';
import { hasFunctionsByVersion, readServerInfo } from './server-info';

/** Decisions on a Redis server or cluster: Functions on Redis ≥ 7 and Valkey, scripts below. */
export class RedisBackend implements LimiterBackend {
  readonly commands: KeyCommands;
  readonly clustered: boolean;
  private functionsAvailable?: boolean;
  private readonly reloadListeners = new Set<(reload: LibraryReload) => void>();
  /** Hands a runner's reload to every listener. */
  private readonly reloaded = (reload: LibraryReload): void => {
    for (const listener of [...this.reloadListeners]) listener(reload);
  };

  constructor(
    private readonly client: RedisConnection,
    private readonly mode: ExecutionMode,
    private readonly loadFunctions: LoadFunctionsPolicy,
  ) {
    this.commands = client;
    this.clustered = isCluster(client);
  }

  /** Ready, or never connected (lazy); while ioredis reconnects the limiter fails fast rather than queue. */
  isConnected(): boolean {
    const { status } = this.client;
    return status === 'ready' || status === 'wait';
  }

  nodeOf(key: string): string {
    if (!this.clustered) return '';
    // The slot map ioredis keeps: [master, ...replicas] per slot; empty until the cluster is ready.
    return (this.client as Cluster).slots[calculateSlot(key)]?.[0] ?? '';
  }

  onReady(listener: () => void): () => void {
    return onClientReady(this.client, listener);
  }

  onReload(listener: (reload: LibraryReload) => void): () => void {
    // A wrapper: the same function subscribed twice is two subscriptions.
    const entry = (reload: LibraryReload) => listener(reload);
    this.reloadListeners.add(entry);
    return () => this.reloadListeners.delete(entry);
  }

  watchOverrides(listener: OverrideChangeListener): () => void {
    // On a cluster a change's message crosses the cluster bus, and may come after the setter's reply:
    // the block cache is then never told it hears every change, and keeps no refusal.
    return this.clustered ? () => undefined : watchOverrideChanges(this.client as Redis, listener);
  }

  /** The overrides of the keys under `settings.keyPrefix`, on this connection, dated by `settings.clock`. */
  overridesStore(settings: OverridesStoreSettings): OverrideStore {
    return new RedisOverridesStore(this.client, { keyPrefix: settings.keyPrefix, clock: settings.clock });
  }

  async runnerFor(contract: FunctionContract, policy: LoadFunctionsPolicy): Promise<LuaRunner> {
    const runner = (await this.useFunctions())
      ? new FunctionRunner(this.client, contract, this.loadFunctions, this.reloaded)
      : new ScriptRunner(this.client, contract);
    await runner.prepare(policy);
    return runner;
  }

  private async useFunctions(): Promise<boolean> {
    if (this.mode !== 'auto') return this.mode === 'function';
    if (this.functionsAvailable === undefined) {
      const [node] = await masterNodes(this.client);
      this.functionsAvailable = hasFunctionsByVersion(await readServerInfo(node));
    }
    return this.functionsAvailable;
  }
}
