import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** Which server the suite starts: Redis by default, Valkey with `TEST_SERVER=valkey`. */
export type TestServerKind = 'redis' | 'valkey';

/** The executables the suite starts servers and clusters with. */
export interface ServerBinaries {
  readonly kind: TestServerKind;
  /** `redis-server` (from PATH) or the path of `valkey-server`. */
  readonly server: string;
  /** `redis-cli` or `valkey-cli`: joins clusters and reads CLUSTER INFO. */
  readonly cli: string;
}

const ROOT = join(__dirname, '..', '..');

/**
 * The Valkey source and the script that builds it, beside the clone (`../shared/valkey`; a read-only
 * copy in CI). The build goes to a cache outside it (~/.cache/valkey, or VALKEY_CACHE).
 */
export const VALKEY_BUILD_SCRIPT = join(ROOT, '..', 'shared', 'valkey', 'build.sh');

/** `TEST_SERVER`: `redis` (default) or `valkey`; anything else is an error, never a silent default. */
export function testServerKind(): TestServerKind {
  const value = process.env.TEST_SERVER || 'redis';
  if (value === 'redis' || value === 'valkey') return value;
  throw new Error(`TEST_SERVER=${value} is not a server the suite can start: use redis (the default) or valkey`);
}

let resolved: ServerBinaries | undefined;

/**
 * The binaries of the selected server. Valkey: `VALKEY_SERVER` (its `valkey-cli` beside it, or
 * `VALKEY_CLI`), else what `build.sh` prints — it builds once per machine (about 2 minutes on 2 cores)
 * and prints the cached path afterwards. Global setup resolves this once and exports `VALKEY_SERVER`,
 * so the test workers inherit the path instead of calling the script again.
 * @throws when Valkey is selected and cannot be found or built: the Valkey tests are never skipped.
 */
export function serverBinaries(): ServerBinaries {
  if (resolved) return resolved;
  if (testServerKind() === 'redis') {
    resolved = { kind: 'redis', server: 'redis-server', cli: 'redis-cli' };
    return resolved;
  }
  const server = process.env.VALKEY_SERVER || buildValkey();
  const cli = process.env.VALKEY_CLI || join(dirname(server), 'valkey-cli');
  for (const [name, path] of [
    ['VALKEY_SERVER', server],
    ['VALKEY_CLI', cli],
  ]) {
    if (!existsSync(path)) throw new Error(`TEST_SERVER=valkey: ${name} ${path} does not exist`);
  }
  resolved = { kind: 'valkey', server, cli };
  return resolved;
}

let identity: { name: TestServerKind; version: string } | undefined;

/**
 * What the servers the suite starts report in INFO (`name`, and `valkey_version` or `redis_version`):
 * the selected kind, and the version its binary's `--version` prints.
 */
export function testServerIdentity(): { name: TestServerKind; version: string } {
  if (identity) return identity;
  const { kind, server } = serverBinaries();
  const printed = execFileSync(server, ['--version'], { encoding: 'utf8' });
  const version = /\bv=(\d+\.\d+\.\d+)/.exec(printed)?.[1];
  if (!version) throw new Error(`no version in the output of ${server} --version: ${printed}`);
  identity = { name: kind, version };
  return identity;
}

function buildValkey(): string {
  const script = relative(process.cwd(), VALKEY_BUILD_SCRIPT);
  if (!existsSync(VALKEY_BUILD_SCRIPT)) {
    throw new Error(
      `TEST_SERVER=valkey: set VALKEY_SERVER to a valkey-server binary, or provide ${script} (the Valkey source ` +
        'beside the clone) to build one',
    );
  }
  process.stderr.write(
    `TEST_SERVER=valkey: valkey-server from ${script} (its first run on a machine builds it: ~2 min)\n`,
  );
  // The script's messages (a missing compiler, the end of a failed build's log) go straight to the terminal.
  const build = spawnSync(VALKEY_BUILD_SCRIPT, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const path = build.stdout?.trim().split('\n').pop();
  if (build.status !== 0 || !path) {
    throw new Error(
      `TEST_SERVER=valkey: ${script} failed (${build.error?.message ?? `exit ${build.status ?? build.signal}`}); ` +
        'its output is above. Install make and a C compiler, or set VALKEY_SERVER to a built valkey-server',
    );
  }
  return path;
}
