import { describeServer, type ServerIdentity } from '../server-identity';
import { SlidingLimitError } from './sliding-limit.error';

/** What a server that cannot run Redis Functions lacks. */
export type MissingFunctionSupport =
  /** The FUNCTION command: renamed or disabled (`rename-command FUNCTION ""` in the server's config). */
  | 'function-command'
  /** A Lua engine for functions: Lua ships as a module that is not loaded (Valkey 9.1 and later). */
  | 'lua-engine';

/**
 * A server cannot run Redis Functions at all (FUNCTION renamed or disabled, no Lua engine). The message
 * names both fixes: enable functions, or run the Lua as scripts (`mode: 'script'`) when `scriptsWork`.
 */
export class FunctionsUnavailableError extends SlidingLimitError {
  /** host:port of the node. */
  readonly node: string;
  /** The server, when its INFO could be read. */
  readonly server?: ServerIdentity;
  /** What the server lacks: the FUNCTION command, or a Lua engine for functions. */
  readonly missing: MissingFunctionSupport;
  /** Whether `EVAL` runs Lua on the node, so that `mode: 'script'` works there. */
  readonly scriptsWork: boolean;

  /**
   * @param details.redisMessage the server's error that showed it
   * @param details.evalError why `EVAL` failed on the node too; absent when it runs Lua
   */
  constructor(details: {
    node: string;
    server?: ServerIdentity;
    missing: MissingFunctionSupport;
    redisMessage: string;
    evalError?: string;
  }) {
    const { node, server, missing, redisMessage, evalError } = details;
    const where = `the server at ${node}${server ? ` (${describeServer(server)})` : ''}`;
    const cause =
      missing === 'function-command'
        ? `has no FUNCTION command (${redisMessage}): it is renamed or disabled (rename-command FUNCTION in its ` +
          'configuration: undo it), or Lua is a module the server did not load (Valkey 9.1 and later: load it)'
        : `has no Lua engine for functions (${redisMessage}): Lua is a module the server did not load ` +
          '(Valkey 9.1 and later: load it)';
    const scripts =
      evalError === undefined
        ? "EVAL works there: or set mode: 'script' to run the same Lua as scripts"
        : `EVAL fails there too (${evalError}): mode: 'script' cannot help until the server runs Lua`;
    super(`${where} ${cause}. ${scripts}`);
    this.node = node;
    this.server = server;
    this.missing = missing;
    this.scriptsWork = evalError === undefined;
  }
}
