// The Nest apps of the HTTP and guard sections: http-app.mjs, one process per configuration, started,
// asked over IPC and stopped from here (see http-app.mjs for the configurations and the protocol).
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopChild, track } from './processes.mjs';
import { log } from './report.mjs';

const require = createRequire(import.meta.url);
const APP = join(dirname(fileURLToPath(import.meta.url)), '..', 'http-app.mjs');

/** The configurations of http-app.mjs, and the packages each needs besides ours. */
export const HTTP_CONFIGS = [
  { id: 'none', label: 'no guard', packages: [] },
  { id: 'ours', label: 'our guard', packages: [] },
  { id: 'ours-client', label: "our guard on the user's ioredis client", packages: [] },
  {
    id: 'nest-lab',
    label: '@nestjs/throttler + @nest-lab/throttler-storage-redis',
    packages: ['@nestjs/throttler', '@nest-lab/throttler-storage-redis'],
  },
  {
    id: 'nestjs-redis',
    label: '@nestjs/throttler + @nestjs-redis/throttler-storage',
    packages: ['@nestjs/throttler', '@nestjs-redis/throttler-storage', 'redis'],
  },
];

/**
 * Starts http-app.mjs for `config` against the package at `target.dist`, with every limit at
 * `target.limit` per `target.windowMs`: listening on a port, or with `mode` 'guard' the guard alone (no HTTP).
 */
function startApp(config, target, mode = 'http') {
  return new Promise((resolve, reject) => {
    const child = track(
      fork(APP, [config, String(target.redisPort), String(target.limit), String(target.windowMs), mode], {
        execArgv: [],
        env: { ...process.env, BENCH_DIST: target.dist },
        stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      }),
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      reject(new Error(`app "${config}" did not start within 30 s\n${stderr}`));
      // Not left running (and loading the machine) until the end of the whole run.
      stopChild(child);
    }, 30_000);
    child.once('message', (message) => {
      clearTimeout(timer);
      resolve({ child, port: message.port, stderr: () => stderr });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`app "${config}" exited with ${code}\n${stderr.trim().split('\n').slice(0, 8).join('\n')}`));
    });
  });
}

/**
 * Starts http-app.mjs for each of `configs` (`target` and `mode` as in startApp): `{ apps, unavailable }`,
 * the second saying why a configuration is missing (a package not installed, or the app failed to start).
 */
export async function startApps(configs, target, mode = 'http') {
  const apps = {};
  const unavailable = {};
  for (const config of configs) {
    const missing = config.packages.filter((name) => {
      try {
        require.resolve(name);
        return false;
      } catch {
        return true;
      }
    });
    if (missing.length > 0) {
      unavailable[config.id] = `not installable: ${missing.join(', ')} missing`;
      continue;
    }
    try {
      apps[config.id] = await startApp(config.id, target, mode);
    } catch (error) {
      unavailable[config.id] = `failed to start: ${error.message.split('\n')[0]}`;
      log(`  ${config.id}${mode === 'http' ? '' : ` (${mode})`}: ${error.message}`);
    }
  }
  return { apps, unavailable };
}

/** Stops every app of `apps`, one after the other. */
export async function stopApps(apps) {
  for (const app of Object.values(apps)) await stopChild(app.child);
}

/**
 * Sends `message` to an app started by startApp and resolves with its one reply. Rejects when the app
 * answers `{ error }`, exits, or gives no answer within `timeoutMs`.
 */
export function askApp(app, message, timeoutMs) {
  const { child } = app;
  return new Promise((resolve, reject) => {
    const settle = (fn, value) => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      fn(value);
    };
    const onMessage = (reply) => (reply.error ? settle(reject, new Error(reply.error)) : settle(resolve, reply));
    const onExit = (code, signal) =>
      settle(
        reject,
        new Error(`exited with ${signal ?? code}\n${app.stderr().trim().split('\n').slice(0, 8).join('\n')}`.trim()),
      );
    const timer = setTimeout(() => settle(reject, new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    child.on('message', onMessage);
    child.once('exit', onExit);
    // A child that exited while no question was pending: the channel is closed and no 'exit' follows.
    child.send(message, (error) => error && settle(reject, error));
  });
}
