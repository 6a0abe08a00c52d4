/** Runs a function of the active library version on Redis: as a Redis Function or as a script. */
export interface LuaRunner {
  /** How the Lua runs: `function` (FCALL), `script` (EVALSHA) or `memory` (the in-process model). */
  readonly mode: 'function' | 'script' | 'memory';
  /** Loads or verifies what the server needs, following `policy`. */
  prepare(policy: LoadFunctionsPolicy): Promise<void>;
  /**
   * Calls `functionName` with KEYS and ARGV exactly as FCALL would receive them.
   * `readOnly` runs it as FCALL_RO where the mode allows, so it may be served by a replica.
   */
  run(
    functionName: string,
    keys: readonly string[],
    args: readonly (string | number)[],
    readOnly: boolean,
  ): Promise<unknown>;
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
