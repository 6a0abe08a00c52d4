import calculateSlot from 'cluster-key-slot';
import { FunctionNotLoadedError } from '../core/errors/function-not-loaded.error';
import type { LibraryReload } from '../core/limiter-backend';
import type { LoadFunctionsPolicy } from '../core/lua-runner';
import type { RedisConnection } from '../core/redis-connection';
import type { FunctionContract } from '../core/function-contract';
import { FunctionLoader, loadCommandFor } from './function-loader';
import type { LuaRunner } from '../core/lua-runner';
import { isCluster, nodeAddress } from './redis-nodes';
import { isFunctionNotFound } from './reply';

/** Reloads (each followed by a retry) one call may wait for before it reports the function missing. */
const MAX_RELOADS = 2;

/** Runs the library as Redis Functions; a "Function not found" reloads it (not under `off`) and retries. */
export class FunctionRunner implements LuaRunner {
  readonly mode = 'function';
  private readonly loader: FunctionLoader;
  private reloading?: Promise<void>;

  constructor(
    private readonly connection: RedisConnection,
    private readonly contract: FunctionContract,
    private readonly policy: LoadFunctionsPolicy,
    /** Told of every reload that loaded the library somewhere. */
    private readonly onReload: (reload: LibraryReload) => void = () => undefined,
  ) {
    this.loader = new FunctionLoader(connection, contract);
  }

  async prepare(policy: LoadFunctionsPolicy): Promise<void> {
    await this.loader.prepare(policy);
  }

  /** The FCALL (FCALL_RO) as it is: the decision path makes one per decision, so no async frame here. */
  run(
    functionName: string,
    keyCount: number,
    keysAndArguments: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown> {
    return readOnly
      ? this.connection.fcall_ro(functionName, keyCount, ...keysAndArguments)
      : this.connection.fcall(functionName, keyCount, ...keysAndArguments);
  }

  /** A "Function not found": reloaded and retried (not under `off`), else reported as a missing library. */
  recover(
    error: unknown,
    functionName: string,
    keyCount: number,
    keysAndArguments: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown> | undefined {
    return isFunctionNotFound(error)
      ? this.reloadAndRetry(functionName, keyCount, keysAndArguments, readOnly)
      : undefined;
  }

  /** When the function is missing: reload and retry, twice at most; else (always under `off`) fail with the fix. */
  private async reloadAndRetry(
    functionName: string,
    keyCount: number,
    keysAndArguments: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown> {
    for (let reloads = 0; this.policy !== 'off' && reloads < MAX_RELOADS; reloads++) {
      await this.reload(functionName);
      try {
        return await this.run(functionName, keyCount, keysAndArguments, readOnly);
      } catch (retryError) {
        if (!isFunctionNotFound(retryError)) throw retryError;
      }
    }
    throw new FunctionNotLoadedError(
      functionName,
      this.contract.libraryName,
      [this.nodeServing(String(keysAndArguments[0]))],
      loadCommandFor(this.contract, this.connection),
    );
  }

  /** One reload at a time, shared by every call that hit the missing function meanwhile. */
  private reload(functionName: string): Promise<void> {
    this.reloading ??= this.loader
      .prepare('auto')
      .then((nodes) => {
        if (nodes.length > 0)
          this.onReload({ libraryName: this.contract.libraryName, functionName, nodes, policy: this.policy });
      })
      .finally(() => (this.reloading = undefined));
    return this.reloading;
  }

  /** host:port of the master serving `key`, as the slot map knows it. */
  private nodeServing(key: string): string {
    if (!isCluster(this.connection)) return nodeAddress(this.connection);
    return this.connection.slots[calculateSlot(key)]?.[0] ?? `the node serving key ${key}`;
  }
}
