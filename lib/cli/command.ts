import type { Redis } from 'ioredis';
import type { RedisConnection } from '../core/redis-connection';
import type { ServerIdentity } from '../core/server-identity';
import type { CliOptions } from './cli-options';
import type { ExitCode } from './exit-codes';

export interface CommandContext {
  readonly options: CliOptions;
  readonly connection: RedisConnection;
  /** Clients of every master, in a stable order. */
  readonly masters: Redis[];
  readonly servers: ReadonlyMap<Redis, ServerIdentity>;
  /** The CLI invocation that reaches the same Redis, for commands suggested in messages. */
  readonly suggest: (command: string) => string;
}

/** What a command reports: its exit code, its `--json` document and its text output. */
export interface CommandOutcome {
  exitCode: ExitCode;
  /** Fields of the JSON document, after `ok` and `command`. */
  json: Record<string, unknown>;
  /** Text output, lines ending with a newline. */
  text: string;
  /** A one-line summary printed to stderr when the exit code is not 0. */
  error?: string;
  /** Printed to stderr, one `warning:` line each, whatever the exit code (the `--json` document carries its own). */
  warnings?: readonly string[];
}

export type Command = (context: CommandContext) => Promise<CommandOutcome>;
