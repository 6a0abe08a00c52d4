import { FunctionNotLoadedError } from '../core/errors/function-not-loaded.error';
import type { LoadFunctionsPolicy } from '../core/lua-runner';
import type { RedisConnection } from '../core/redis-connection';
import type { FunctionContract } from '../core/function-contract';
import { FunctionLoader, loadCommandFor } from './function-loader';
import type { LuaRunner } from '../core/lua-runner';
import { isFunctionNotFound } from './reply';

/** Reloads (each followed by a retry) one call may wait for before it reports the function missing. */
const MAX_RELOADS = 2;

/**
 * Runs the library as Redis Functions (FCALL / FCALL_RO). Under `loadFunctions: 'auto'` a
 * "Function not found" (Redis restarted empty, FUNCTION FLUSH, a new master) reloads the library
 * and retries with the same arguments, so the same request id: a retry can never count twice.
 */
export class FunctionRunner implements LuaRunner {
  readonly mode = 'function';
  private readonly loader: FunctionLoader;
  private reloading?: Promise<void>;

  constructor(
    private readonly connection: RedisConnection,
    private readonly contract: FunctionContract,
    private readonly policy: LoadFunctionsPolicy,
  ) {
    this.loader = new FunctionLoader(connection, contract);
  }

  prepare(policy: LoadFunctionsPolicy): Promise<void> {
    return this.loader.prepare(policy);
  }

  /** The FCALL (FCALL_RO) as it is: the decision path makes one per decision, so no async frame here. */
  run(
    functionName: string,
    keys: readonly string[],
    args: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown> {
    return readOnly
      ? this.connection.fcall_ro(functionName, keys.length, ...keys, ...args)
      : this.connection.fcall(functionName, keys.length, ...keys, ...args);
  }

  /** A "Function not found": reloaded and retried under `auto`, else reported as a missing library. */
  recover(
    error: unknown,
    functionName: string,
    keys: readonly string[],
    args: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown> | undefined {
    return isFunctionNotFound(error) ? this.reloadAndRetry(functionName, keys, args, readOnly) : undefined;
  }

  /**
   * When the function is missing (`auto`): reload and retry, twice at most — a second FUNCTION FLUSH
   * can land between a reload and its retry; else fail, naming the library and the fix.
   */
  private async reloadAndRetry(
    functionName: string,
    keys: readonly string[],
    args: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown> {
    for (let reloads = 0; this.policy === 'auto' && reloads < MAX_RELOADS; reloads++) {
      await this.reload();
      try {
        return await this.run(functionName, keys, args, readOnly);
      } catch (retryError) {
        if (!isFunctionNotFound(retryError)) throw retryError;
      }
    }
    throw new FunctionNotLoadedError(
      functionName,
      this.contract.libraryName,
      [`the node serving key ${keys[0]}`],
      loadCommandFor(this.contract, this.connection),
    );
  }

  /** One reload at a time, shared by every call that hit the missing function meanwhile. */
  private reload(): Promise<void> {
    this.reloading ??= this.loader.prepare('auto').finally(() => (this.reloading = undefined));
    return this.reloading;
  }
}
