// A Redis (or Valkey) server under `valgrind --tool=callgrind` for counting the instructions of some
// measured commands: start it, zero its counters after a warm-up, stop it and read the total; and the
// library texts those benches load. Used by bench/callgrind-versions.mjs and
// bench/redis-cpu-windows.mjs; one fresh server per measurement.
//
//   CALLGRIND_SERVER=<path>/valkey-server   another server binary (Valkey's build has symbols to profile)
//   CALLGRIND_KEEP=<dir>                    keeps each measurement's callgrind dump there, for callgrind_annotate
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, outputReady, redisServerArgs, tempDir, track } from './processes.mjs';

const require = createRequire(import.meta.url);
const Redis = require('ioredis').default;
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * A Function library's text as FUNCTION LOAD receives it, assembled from its parts by the package's
 * own assembler (dist/, so `npm run build` first), and the version its functions are registered
 * under (`sliding_allow_<version>`). `source` is one of:
 *   a file path        lib/redis/lua/rate_limit_v2.lua, or any library file (its parts beside it)
 *   <rev>:<path>       that file at a git revision, e.g. 93f3717:lib/redis/lua/rate_limit_v4.lua
 *   <rev>              lib/redis/lua/rate_limit_v2.lua at that revision
 */
export function libraryText(source) {
  const distAssembler = join(ROOT, 'dist', 'redis', 'lua-library.js');
  if (!existsSync(distAssembler)) throw new Error('dist/ is missing: run `npm run build` first');
  const { assembleLibrary } = require(distAssembler);
  let file = source;
  if (!existsSync(source)) {
    const [rev, path = 'lib/redis/lua/rate_limit_v2.lua'] = source.split(':');
    // The revision's whole folder of libraries, so that a library made of parts assembles as it was.
    const dir = tempDir('sliding-bench-library-');
    const folder = dirname(path);
    const archive = execFileSync('git', ['archive', rev, folder], { cwd: ROOT, maxBuffer: 1 << 26 });
    execFileSync('tar', ['-x', '-C', dir], { input: archive });
    file = join(dir, path);
  }
  const text = assembleLibrary(dirname(file), basename(file));
  const version = /register_function\('sliding_allow_(v\d+)'/.exec(text)?.[1];
  if (!version) throw new Error(`${source}: registers no sliding_allow_v<n> function`);
  return { source, text, version };
}

/** Starts a server under callgrind on a free loopback port (`serverArgs` added), with an ioredis client on it. */
export async function startCallgrindRedis(serverArgs = []) {
  const port = await freePort();
  const dir = tempDir('sliding-bench-callgrind-');
  const args = [
    '--tool=callgrind',
    `--callgrind-out-file=${join(dir, 'callgrind.out')}`,
    process.env.CALLGRIND_SERVER ?? 'redis-server',
  ];
  const server = track(
    spawn('valgrind', [...args, ...redisServerArgs(port, dir), ...serverArgs], { stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  await outputReady(server, 'redis-server under callgrind', 60_000);
  // Commands run ~50× slower under valgrind: a generous timeout, and no reconnection on a stop.
  const client = new Redis({ host: '127.0.0.1', port, commandTimeout: 600_000, retryStrategy: () => null });
  client.on('error', () => {});
  return { port, server, dir, client };
}

/** Zeroes the server's counters: what follows is what gets counted. */
export function zeroCounters({ server }) {
  execFileSync('callgrind_control', ['-z', String(server.pid)], { stdio: 'ignore' });
}

/**
 * Shuts the server down and returns the instructions counted since `zeroCounters`; the dump is
 * kept as `<CALLGRIND_KEEP>/<keepName>.out` when CALLGRIND_KEEP is set.
 */
export async function stopAndCount({ server, client, dir }, keepName) {
  const exited = new Promise((resolve) => server.once('exit', resolve));
  await client.call('SHUTDOWN', 'NOSAVE').catch(() => undefined);
  client.disconnect();
  await exited;
  const text = readFileSync(join(dir, 'callgrind.out'), 'utf8');
  if (process.env.CALLGRIND_KEEP) writeFileSync(join(process.env.CALLGRIND_KEEP, `${keepName}.out`), text);
  return Number(text.match(/^totals:\s*(\d+)/m)?.[1] ?? text.match(/^summary:\s*(\d+)/m)?.[1]);
}
