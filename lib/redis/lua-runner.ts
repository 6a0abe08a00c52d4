import type { LoadFunctionsPolicy } from '../limiter/sliding-window-limiter.interfaces';

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
  run(functionName: string, keys: readonly string[], args: readonly (string | number)[], readOnly: boolean): Promise<unknown>;
}
