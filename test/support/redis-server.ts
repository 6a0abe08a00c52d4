import { ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port';
import { serverBinaries } from './test-server';

/**
 * A redis-server process started by the test suite on a loopback port — a valkey-server when the
 * suite runs with `TEST_SERVER=valkey` (see test-server.ts): every test that starts a server then
 * runs on Valkey.
 */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly process: ChildProcess;
  /** Stops the server and removes its working directory. */
  stop(): Promise<void>;
}

/**
 * Starts a throw-away redis-server on a free 127.0.0.1 port, with nothing persisted.
 * Tests that flush functions or data start their own so they never touch a shared server.
 */
export async function startRedisServer(extraArgs: string[] = []): Promise<RedisServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await tryStart(await freePort(), extraArgs);
    } catch (error) {
      // Another process may grab the port between freePort() and the bind.
      if (attempt >= 5) throw error;
    }
  }
}

/**
 * Starts an empty, non-persisting redis-server on a given port: what a Redis restarted without its
 * data looks like to a client that keeps reconnecting to the same address.
 */
export function startRedisServerOnPort(port: number, extraArgs: string[] = []): Promise<RedisServer> {
  return tryStart(port, extraArgs);
}

async function tryStart(port: number, extraArgs: string[]): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'nsl-redis-'));
  const binary = serverBinaries().server;
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit');

  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await waitUntilReady(port, () => child.exitCode !== null);
  } catch (error) {
    await stop();
    throw new Error(`${binary} on port ${port} did not start: ${(error as Error).message}\n${output}`, {
      cause: error,
    });
  }
  return { port, url: `redis://127.0.0.1:${port}`, process: child, stop };
}

async function waitUntilReady(port: number, hasExited: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (hasExited()) throw new Error('process exited');
    if (await answersPing(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('timed out waiting for PONG');
}

/*
 * A raw socket rather than an ioredis client: a failed ioredis connect leaves a reconnect
 * timer behind that keeps the process alive for seconds after the suite ends.
 */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => finish(data.toString().startsWith('+PONG')));
  });
}
