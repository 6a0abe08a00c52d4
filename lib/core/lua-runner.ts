import { joined } from './call-arguments';
/** Runs a function of the active library version on Redis: as a Redis Function or as a script. */
export interface LuaRunner {
  /** How the Lua runs: `function` (FCALL), `script` (EVALSHA) or `memory` (the in-process model). */
  readonly mode: 'function' | 'script' | 'memory';
  /** Loads or verifies what the server needs, following `policy`. */
  prepare(policy: LoadFunctionsPolicy): Promise<void>;
  /**
   * Calls `functionName` as FCALL would (the first `keyCount` of `keysAndArguments` are KEYS), leaving
   * failures to {@link LuaRunner.recover}; `readOnly` runs it as FCALL_RO where the mode allows.
   */
  run(
    functionName: string,
    keyCount: number,
    keysAndArguments: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown>;
  /** After `run` failed: the reply of the same call made again once repaired, or undefined when it cannot be. */
  recover?(
    error: unknown,
    functionName: string,
    keyCount: number,
    keysAndArguments: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown> | undefined;
}

/** `run`, then `recover` when it failed: a call made off the decision path. */
export async function runRecovering(
  runner: LuaRunner,
  functionName: string,
  keys: readonly string[],
  args: readonly (string | number)[],
  readOnly: boolean,
): Promise<unknown> {
  const keysAndArguments = joined(keys, args);
  try {
    return await runner.run(functionName, keys.length, keysAndArguments, readOnly);
  } catch (error) {
    const recovery = runner.recover?.(error, functionName, keys.length, keysAndArguments, readOnly);
    if (!recovery) throw error;
    return recovery;
  }
}

/** How the limiter makes sure the Redis side has its Lua: see `SlidingWindowLimiterOptions.loadFunctions`. */
export type LoadFunctionsPolicy = 'auto' | 'verify' | 'off';

/** Which Redis mechanism runs the Lua: see `SlidingWindowLimiterOptions.mode`. */
export type ExecutionMode = 'auto' | 'function' | 'script';
