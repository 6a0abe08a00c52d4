// A Redis (or Valkey) server under `valgrind --tool=callgrind` for counting the instructions of some
// measured commands: start it, zero its counters after a warm-up, stop it and read the total. Used by
// bench/callgrind-versions.mjs and bench/redis-cpu-windows.mjs; one fresh server per measurement.
//
//   CALLGRIND_SERVER=<path>/valkey-server   another server binary (Valkey's build has symbols to profile)
//   CALLGRIND_KEEP=<dir>                    keeps each measurement's callgrind dump there, for callgrind_annotate
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { freePort, outputReady, redisServerArgs, tempDir, track } from './processes.mjs';

const require = createRequire(import.meta.url);
const Redis = require('ioredis').default;

/** Starts a server under callgrind on a free loopback port, with an ioredis client on it. */
export async function startCallgrindRedis() {
  const port = await freePort();
  const dir = tempDir('sliding-bench-callgrind-');
  const args = [
    '--tool=callgrind',
    `--callgrind-out-file=${join(dir, 'callgrind.out')}`,
    process.env.CALLGRIND_SERVER ?? 'redis-server',
  ];
  const server = track(
    spawn('valgrind', [...args, ...redisServerArgs(port, dir)], { stdio: ['ignore', 'pipe', 'pipe'] }),
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
