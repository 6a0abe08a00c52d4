import { CliOptions, CommandName, commandLabel, parseCommandLine, USAGE } from './cli-options';
import type { Command, CommandOutcome } from './command';
import { connectionFlags, secretsOf } from './connection-target';
import { CliError, EXIT_CODE_NAMES, ExitCode } from './exit-codes';
import { packageVersion } from '../core/package-version';
import { redactSecrets } from '../core/redact';
import type { ServerIdentity } from '../core/server-identity';

// Loaded once a command is about to run: --help, --version and usage errors never load ioredis.
const COMMANDS: Record<CommandName, () => Promise<Command>> = {
  list: async () => (await import('./commands/list')).listCommand,
  load: async () => (await import('./commands/load')).loadCommand,
  status: async () => (await import('./commands/status')).statusCommand,
  delete: async () => (await import('./commands/delete')).deleteCommand,
  dump: async () => (await import('./commands/dump')).dumpCommand,
  restore: async () => (await import('./commands/restore')).restoreCommand,
  doctor: async () => (await import('./doctor/doctor')).doctorCommand,
  'overrides set': async () => (await import('./overrides/set')).overridesSetCommand,
  'overrides get': async () => (await import('./overrides/get')).overridesGetCommand,
  'overrides delete': async () => (await import('./overrides/delete')).overridesDeleteCommand,
  'overrides list': async () => (await import('./overrides/list')).overridesListCommand,
};

/** Checks made before connecting, so that a bad argument fails as a usage error without touching Redis. */
const PRECHECKS: Partial<Record<CommandName, (options: CliOptions) => Promise<void>>> = {
  load: async (options) => void (await import('./version-arg')).requireBundledVersion(options.args[0]),
  delete: async (options) => void (await import('./version-arg')).requireLibraryArgument(options.args[0]),
  restore: async (options) => void (await import('./dump-file')).readDumpFile(options.args[0]),
};

/** Where the CLI writes and what it reads from its environment (REDIS_URL); injected by tests. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
}

/**
 * The CLI (see `--help`). Returns the exit code instead of exiting, so it runs in-process in tests
 * and the bin sets `process.exitCode`.
 * @param argv the arguments after the program name
 * @param io where output goes and the environment it reads; the process's by default
 */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  const out: CliIo = {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    env: process.env,
    ...io,
  };
  let secrets: string[] = [];
  const write = (stream: 'stdout' | 'stderr', text: string) => out[stream](redactSecrets(text, secrets));
  let json = argv.includes('--json');
  let options: CliOptions | undefined;

  try {
    const parsed = parseCommandLine(argv, out.env);
    if (parsed.help) {
      write('stdout', USAGE);
      return ExitCode.Ok;
    }
    if (parsed.version) {
      write('stdout', `${packageVersion()}\n`);
      return ExitCode.Ok;
    }
    options = parsed;
    json = options.json;
    secrets = secretsOf(options.target);
    await PRECHECKS[options.command]?.(options);

    const { outcome, servers } = await run(options);
    const fields = { servers, ...outcome.json };
    write('stdout', json ? jsonDocument(options, outcome.exitCode, fields, outcome.error) : outcome.text);
    for (const warning of outcome.warnings ?? []) write('stderr', `warning: ${warning}\n`);
    if (outcome.error) write('stderr', `error: ${outcome.error}\n`);
    return outcome.exitCode;
  } catch (caught) {
    const error = await toCliError(caught, options);
    if (json) write('stdout', jsonDocument(options, error.exitCode, {}, error.message));
    write('stderr', `error: ${error.message}\n`);
    if (error.exitCode === ExitCode.Usage && !options) write('stderr', `\n${USAGE}`);
    else if (error.exitCode === ExitCode.Usage)
      write('stderr', 'Run nestjs-sliding-limit --help for the commands and options.\n');
    return error.exitCode;
  }
}

/** The `--json` document: `ok`, `command`, `exitCode`, the command's fields, and `error` on failure. */
function jsonDocument(options: CliOptions | undefined, exitCode: ExitCode, fields: object, error?: string): string {
  const document = {
    ok: exitCode === ExitCode.Ok,
    command: options ? commandLabel(options.command) : null,
    exitCode,
    ...fields,
    ...(error ? { error: { kind: EXIT_CODE_NAMES[exitCode], message: error } } : {}),
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}

/** The command's outcome, and each master's server for the `--json` document (`{ node, name, version }`). */
async function run(options: CliOptions): Promise<{ outcome: CommandOutcome; servers: ServerIdentity[] }> {
  const [{ openConnection }, { nodeAddress }, command] = await Promise.all([
    import('./connection'),
    import('../redis/redis-nodes'),
    COMMANDS[options.command](),
  ]);
  const { connection, masters, servers, close } = await openConnection(options.target, options.timeoutMs, options.resp);
  try {
    const sorted = [...masters].sort((a, b) =>
      nodeAddress(a).localeCompare(nodeAddress(b), undefined, { numeric: true }),
    );
    const outcome = await command({
      options,
      connection,
      masters: sorted,
      servers,
      suggest: (command) => `npx nestjs-sliding-limit ${command}${connectionFlags(options.target)}`,
    });
    const entries = sorted.map((node) => ({ node: nodeAddress(node), ...(servers.get(node) as ServerIdentity) }));
    return { outcome, servers: entries };
  } finally {
    await close();
  }
}

async function toCliError(error: unknown, options: CliOptions | undefined): Promise<CliError> {
  if (error instanceof CliError) return error;
  const [{ isUnanswered }, { messageOf }] = await Promise.all([
    import('../redis/error-kind'),
    import('../redis/reply'),
  ]);
  if (options && isUnanswered(error))
    return (await import('./connection')).connectionError(options.target, error as Error);
  return new CliError(ExitCode.Failed, `unexpected failure: ${messageOf(error)}`, { cause: error });
}
