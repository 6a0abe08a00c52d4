import { joined } from './call-arguments';
/** Runs a function of the active library version on Redis: as a Redis Function or as a script. */
export interface LuaRunner {
  /** How the Lua runs: `function` (FCALL), `script` (EVALSHA) or `memory` (the in-process model). */
  readonly mode: 'function' | 'script' | 'memory';
  /** Loads or verifies what the server needs, following `policy`. */
  prepare(policy: LoadFunctionsPolicy): Promise<void>;
  /**
   * Calls `functionName` with KEYS and ARGV exactly as FCALL would receive them — the first `keyCount`
   * of `keysAndArguments` are KEYS, the rest ARGV — as it is: a failure the runner can recover from
   * (a library or script the server lost) is left to {@link LuaRunner.recover}. `readOnly` runs it as
   * FCALL_RO where the mode allows, so it may be served by a replica.
   */
  run(
    functionName: string,
    keyCount: number,
    keysAndArguments: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown>;
  /**
   * After `run` failed with `error`: the reply of the call made again once the cause is repaired (the
   * library reloaded, the script sent whole), with the same arguments; undefined when `error` is not
   * one this runner recovers from. Absent: no error is.
   */
  recover?(
    error: unknown,
    functionName: string,
    keyCount: number,
    keysAndArguments: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown> | undefined;
}

/**
 * `run`, then `recover` when it failed: a call as a caller outside the decision path makes it (the
 * decision path hands the failure to `recover` itself, without an async frame per call).
 */
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

/** How the limiter makes sure the Redis side has its Lua. */
export type LoadFunctionsPolicy =
  /** Load the bundled library when it is missing, and again after a "Function not found" (default). */
  | 'auto'
  /** Fail at start-up, naming what is missing and the command that loads it. */
  | 'verify'
  /** Trust the server; load nothing, check nothing. */
  | 'off';

/** Which Redis mechanism runs the Lua. */
export type ExecutionMode =
  /** Functions on Redis 7 or newer, scripts below (default). */
  | 'auto'
  /** `FCALL` of the versioned Redis Function. */
  | 'function'
  /** `EVALSHA` of the same Lua as a script, with `NOSCRIPT` fallback: for Redis 5 and 6. */
  | 'script';
