import { parseArgs } from 'node:util';
import { DEFAULT_KEY_PREFIX } from '../core/constants';
import { describeRedisUrlProblems } from '../core/redis-url';
import { usage } from './exit-codes';
import { parseOverrideArgs, type OverrideArgs } from './override-args';
import { parseWholeNumberFlag } from './whole-number-flag';

const FUNCTIONS_COMMANDS = ['list', 'load', 'status', 'delete', 'dump', 'restore'] as const;
const OVERRIDES_COMMANDS = ['set', 'get', 'delete', 'list'] as const;
type OverridesCommandName = `overrides ${(typeof OVERRIDES_COMMANDS)[number]}`;
export type CommandName = (typeof FUNCTIONS_COMMANDS)[number] | 'doctor' | OverridesCommandName;

/** The command as typed: `functions list`, `doctor`, `overrides set`. */
export function commandLabel(command: CommandName): string {
  return command === 'doctor' || command.startsWith('overrides ') ? command : `functions ${command}`;
}

const RESTORE_POLICIES = ['append', 'replace', 'flush'] as const;
type RestorePolicy = (typeof RESTORE_POLICIES)[number];

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
export const DEFAULT_TIMEOUT_MS = 2000;
const DEFAULT_SAMPLE = 1000;
/** RESP versions the CLI can speak (`--resp`); ioredis' default is 3. */
export type RespVersion = 2 | 3;

export type ConnectionTarget = { kind: 'standalone'; url: string } | { kind: 'cluster'; seeds: string[] };

export interface CliOptions {
  command: CommandName;
  /** The command's positional arguments (`<version>`, `<file>`, `<key>`). */
  args: string[];
  target: ConnectionTarget;
  /** Key prefix of the instance reports; undefined: every prefix. */
  prefix?: string;
  json: boolean;
  replace: boolean;
  force: boolean;
  policy: RestorePolicy;
  timeoutMs: number;
  /** doctor: the key prefix of the sampled keys; overrides: the limiter's. */
  keyPrefix: string;
  /** doctor: keys sampled per master. */
  sample: number;
  resp?: RespVersion;
  /** overrides: what the override flags say (an empty object for the other commands). */
  overrides: OverrideArgs;
}

type ParsedCommandLine =
  { help: true; version?: false } | { help?: false; version: true } | ({ help?: false; version?: false } & CliOptions);

const STRING_FLAGS = ['url', 'cluster', 'timeout', 'resp', 'prefix', 'policy', 'key-prefix', 'sample'] as const;
const OVERRIDE_STRING_FLAGS = ['limit', 'ttl', 'note', 'by', 'match', 'count'] as const;
const BOOLEAN_FLAGS = ['json', 'replace', 'force', 'exempt', 'block', 'version'] as const;
const OPTIONS = {
  ...flagsOf([...STRING_FLAGS, ...OVERRIDE_STRING_FLAGS], 'string'),
  ...flagsOf(BOOLEAN_FLAGS, 'boolean'),
  help: { type: 'boolean', short: 'h' },
} as const;

/** Each command's positional arguments, and its flags besides the connection flags, --json, --timeout and --resp. */
const COMMANDS: Record<CommandName, { args: readonly string[]; flags: readonly string[] }> = {
  list: { args: [], flags: [] },
  load: { args: ['<version>'], flags: ['replace'] },
  status: { args: [], flags: ['prefix'] },
  delete: { args: ['<version>'], flags: ['force', 'prefix'] },
  dump: { args: ['<file>'], flags: [] },
  restore: { args: ['<file>'], flags: ['policy'] },
  doctor: { args: [], flags: ['key-prefix', 'sample'] },
  'overrides set': { args: ['<key>'], flags: ['key-prefix', 'limit', 'exempt', 'block', 'ttl', 'note', 'by'] },
  'overrides get': { args: ['<key>'], flags: ['key-prefix'] },
  'overrides delete': { args: ['<key>'], flags: ['key-prefix'] },
  'overrides list': { args: [], flags: ['key-prefix', 'match', 'count'] },
};
const COMMAND_ONLY_FLAGS = new Set(Object.values(COMMANDS).flatMap((command) => command.flags));

/** The help text; docs/cli.md has the details. */
export const USAGE = `Usage: nestjs-sliding-limit functions <command> [options]
       nestjs-sliding-limit doctor [options]
       nestjs-sliding-limit overrides <command> [options]

Manages the rate limiter's Redis Function libraries (rate_limit_v1, rate_limit_v2, …) on every
master, checks a deployment (doctor) and overrides the limit of one key at runtime.

Commands:
  list               libraries and functions on every master; flags what live instances call and a
                     master lacks, and libraries missing on a master or differing from the bundled code
  load <version>     load the bundled library (v1, v2 or its library name) on every master; other
                     code under that name is left alone unless --replace
  status             which function versions live instances call, with call, rejection and error rates
  delete <version>   FUNCTION DELETE the library on every master; refused while live instances call
                     it, unless --force
  dump <file>        save FUNCTION DUMP (every library, binary) to a file
  restore <file>     FUNCTION RESTORE a dump on every master
  doctor             checks every node: the libraries live instances call, memory and eviction, a
                     sample of the limiter's keys, slow calls, cluster slots and replication

Overrides (<key> as the limiter names it, without the key prefix: login:{ip:10.0.0.1}):
  overrides set <key> (--limit <n> | --exempt | --block) [--ttl <d>] [--note <text>] [--by <who>]
                     set the key's override: its limit instead of the rule's (0 refuses all),
                     not limited, or refused until the block expires
  overrides get <key>      the key's override, if any
  overrides delete <key>   delete the key's override: the rule applies again
  overrides list     the overrides under the key prefix, sorted by key

Options:
  --url <url>        a standalone Redis (default: $REDIS_URL, else ${DEFAULT_REDIS_URL})
  --cluster <seeds>  a Redis Cluster: host:port[,host:port…] (or redis:// URLs with user and password)
  --prefix <prefix>  status, delete: only the reports of limiters with this key prefix (default: all)
  --replace          load: replace a library of the same name that has other code
  --force            delete: delete even though live instances call the version
  --policy <policy>  restore: append (default), replace or flush
  --key-prefix <p>   doctor, overrides: the limiter's keyPrefix (default ${DEFAULT_KEY_PREFIX})
  --sample <n>       doctor: keys sampled per master with SCAN (default ${DEFAULT_SAMPLE})
  --ttl <d>          overrides set: expires after ms, or 30s, 15m, 1h, 7d (default: never)
  --note <text>      overrides set: why (at most 500 characters)
  --by <who>         overrides set: who sets it (default: the OS user@host)
  --match <glob>     overrides list: keys (without the prefix) in Redis' glob syntax (default *)
  --count <n>        overrides list: at most this many (default 100, at most 10000)
  --timeout <ms>     connect and command timeout (default ${DEFAULT_TIMEOUT_MS})
  --resp <2|3>       the RESP version to speak (default 3)
  --json             machine-readable output on stdout
  -h, --help         show this help
  --version          print the package version

Exit codes:
  0  done
  1  refused or failed: list found a problem, delete refused, a node rejected the command, a file
     could not be read or written
  2  usage error (unknown command or flag, missing or invalid argument): nothing was done
  3  Redis unreachable, authentication failed, or a command timed out
doctor: 0 all good, 1 warnings, 2 problems, 3 as above. overrides set exits 0 also when it warns;
get and delete also when the key has no override
`;

/** Parses the command line (without `node` and the script). Throws a usage CliError. */
export function parseCommandLine(argv: readonly string[], env: Record<string, string | undefined>): ParsedCommandLine {
  const { values, positionals } = parseFlags(argv);
  if (values.help) return { help: true };
  if (values.version && positionals.length === 0) return { version: true };

  const { name, args } = commandOf(positionals);
  const label = commandLabel(name);
  const expected = COMMANDS[name].args;
  if (args.length < expected.length) throw usage(`${label} needs ${expected.join(' ')}`);
  if (args.length > expected.length) throw usage(`unexpected argument "${args[expected.length]}" for ${label}`);
  for (const [flag, value] of Object.entries(values)) {
    if (value !== undefined && COMMAND_ONLY_FLAGS.has(flag) && !COMMANDS[name].flags.includes(flag))
      throw usage(`--${flag} does not apply to ${label}${flagHint(flag)}`);
  }
  if (values.url !== undefined && values.cluster !== undefined) throw usage('give either --url or --cluster, not both');
  const prefix = keyPrefix(values['key-prefix']);

  return {
    command: name,
    args,
    target: connectionTarget(values.url, values.cluster, env),
    prefix: values.prefix,
    json: values.json ?? false,
    replace: values.replace ?? false,
    force: values.force ?? false,
    policy: restorePolicy(values.policy),
    timeoutMs: timeout(values.timeout),
    keyPrefix: prefix,
    sample: sampleSize(values.sample),
    resp: respVersion(values.resp),
    overrides: name.startsWith('overrides ') ? parseOverrideArgs(name, args[0], prefix, values) : {},
  };
}

function commandOf(positionals: readonly string[]): { name: CommandName; args: string[] } {
  const [group, command, ...args] = positionals;
  if (group === undefined) throw usage('no command given');
  if (group === 'doctor') return { name: 'doctor', args: positionals.slice(1) };
  const commands: readonly string[] | undefined =
    group === 'functions' ? FUNCTIONS_COMMANDS : group === 'overrides' ? OVERRIDES_COMMANDS : undefined;
  if (!commands)
    throw usage(
      `unknown command "${group}"; commands are under "functions" (e.g. nestjs-sliding-limit functions list), ` +
        'besides doctor and overrides',
    );
  if (command === undefined) throw usage(`"${group}" needs a command: ${commands.join(', ')}`);
  if (!commands.includes(command))
    throw usage(`unknown command "${group} ${command}"; commands: ${commands.join(', ')}`);
  return { name: (group === 'overrides' ? `overrides ${command}` : command) as CommandName, args };
}

function parseFlags(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    // Node's messages name the flag and say what is wrong ("Unknown option '--frce'").
    throw usage((error as Error).message);
  }
}

function flagsOf<F extends string, T extends 'string' | 'boolean'>(
  flags: readonly F[],
  type: T,
): Record<F, { type: T }> {
  return Object.fromEntries(flags.map((flag) => [flag, { type }])) as Record<F, { type: T }>;
}

function flagHint(flag: string): string {
  const owners = (Object.keys(COMMANDS) as CommandName[]).filter((command) => COMMANDS[command].flags.includes(flag));
  return ` (it is for: ${owners.map(commandLabel).join(', ')})`;
}

function connectionTarget(
  url: string | undefined,
  cluster: string | undefined,
  env: Record<string, string | undefined>,
): ConnectionTarget {
  if (cluster !== undefined) {
    const seeds = cluster
      .split(',')
      .map((seed) => seed.trim())
      .filter((seed) => seed.length > 0);
    if (seeds.length === 0)
      throw usage('--cluster needs at least one seed, e.g. --cluster 127.0.0.1:7000,127.0.0.1:7001');
    for (const seed of seeds) {
      if (/^rediss?:\/\//i.test(seed)) {
        const [problem] = describeRedisUrlProblems(seed, 'cluster seed');
        if (problem) throw usage(problem);
      } else if (!/^[^\s:/]+:\d{1,5}$/.test(seed)) {
        throw usage(`cluster seed "${seed}" is not host:port (or a redis:// URL)`);
      }
    }
    return { kind: 'cluster', seeds };
  }
  const chosen = url ?? env.REDIS_URL;
  const [problem] =
    chosen === undefined ? [] : describeRedisUrlProblems(chosen, url === undefined ? 'REDIS_URL' : '--url');
  if (problem) throw usage(problem);
  return { kind: 'standalone', url: chosen ?? DEFAULT_REDIS_URL };
}

function restorePolicy(policy: string | undefined): RestorePolicy {
  if (policy === undefined) return 'append';
  const lower = policy.toLowerCase();
  if (!(RESTORE_POLICIES as readonly string[]).includes(lower))
    throw usage(`--policy must be one of ${RESTORE_POLICIES.join(', ')}, got "${policy}"`);
  return lower as RestorePolicy;
}

function timeout(value: string | undefined): number {
  if (value === undefined) return DEFAULT_TIMEOUT_MS;
  return parseWholeNumberFlag('timeout', value, { min: 1, max: 600_000, noun: 'milliseconds' });
}

function keyPrefix(value: string | undefined): string {
  if (value === undefined) return DEFAULT_KEY_PREFIX;
  if (value.length === 0 || /\s/.test(value))
    throw usage(`--key-prefix must be a non-empty key prefix without spaces, got "${value}"`);
  return value;
}

function sampleSize(value: string | undefined): number {
  if (value === undefined) return DEFAULT_SAMPLE;
  return parseWholeNumberFlag('sample', value, { min: 1, max: 1_000_000, noun: 'keys' });
}

function respVersion(value: string | undefined): RespVersion | undefined {
  if (value === undefined) return undefined;
  if (value === '2' || value === '3') return Number(value) as RespVersion;
  throw usage(`--resp must be 2 or 3, got "${value}"`);
}
