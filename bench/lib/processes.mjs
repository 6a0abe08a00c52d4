// Every child process the benchmark starts, and how they all stop: at the end, on Ctrl-C, on a
// failure and on a watchdog timeout. Children are ended one by one by their own pid, never by name.
// Also what a process' CPU time is so far (the apps' and Redis').
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const children = new Set();
const tempDirs = new Set();
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[11], fields[12]: utime and stime (the 14th and 15th of the whole line), in clock ticks.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Registers a child so that every exit path stops it. */
export function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function alive(child) {
  return child.exitCode === null && child.signalCode === null;
}

/** Stops one child: SIGTERM, then SIGKILL when it has not exited within `graceMs`. */
export async function stopChild(child, graceMs = 3000) {
  if (!alive(child)) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => alive(child) && child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Stops every tracked child and removes the temporary directories. */
export async function stopAll() {
  await Promise.all([...children].map((child) => stopChild(child)));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

let exiting = false;
/**
 * Installs the exit paths: Ctrl-C / SIGTERM stop every child and exit with 128+signal; a watchdog
 * does the same after `maxMs`; on process exit any child still running gets SIGKILL.
 */
export function installCleanup(maxMs) {
  const bail = (code, why) => {
    if (exiting) return;
    exiting = true;
    process.stderr.write(`\nbench: ${why}; stopping ${children.size} child process(es)\n`);
    stopAll().finally(() => process.exit(code));
  };
  process.once('SIGINT', () => bail(130, 'interrupted'));
  process.once('SIGTERM', () => bail(143, 'terminated'));
  const watchdog = setTimeout(() => bail(124, `watchdog: still running after ${maxMs / 1000} s`), maxMs);
  watchdog.unref();
  process.on('exit', () => {
    for (const child of children) if (alive(child)) child.kill('SIGKILL');
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  });
}

export function tempDir(prefix) {
  return registerTempDir(mkdtempSync(join(tmpdir(), prefix)));
}

/** Removes `dir` when the run ends, however it ends. */
export function registerTempDir(dir) {
  tempDirs.add(dir);
  return dir;
}

/** A loopback port that was free a moment ago (the caller retries if it is taken meanwhile). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The arguments of a bench `redis-server`: on `port` of the loopback only, persistence off, files in `dir`. */
export function redisServerArgs(port, dir) {
  return ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
}

/** Starts `redis-server` on a free loopback port with persistence off; retries on a port race. */
export async function startRedis() {
  let lastError;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const dir = tempDir('sliding-bench-redis-');
    const child = track(
      spawn('redis-server', [...redisServerArgs(port, dir), '--daemonize', 'no'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    try {
      await outputReady(child, 'redis-server', 10_000);
      return { port, child };
    } catch (error) {
      lastError = error;
      await stopChild(child);
    }
  }
  throw lastError;
}

/**
 * Resolves once `child` (a Redis or Valkey server, possibly under valgrind) prints "Ready to accept
 * connections" on stdout or stderr, then lets its output flow unread; rejects when it exits, fails to
 * start or says nothing of the kind within `timeoutMs`.
 */
export async function outputReady(child, name, timeoutMs) {
  await new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start within ${timeoutMs / 1000} s:\n${log}`)),
      timeoutMs,
    );
    const onData = (chunk) => {
      log += chunk;
      if (log.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code}:\n${log}`));
    });
  });
  child.stdout.resume();
  child.stderr.resume();
}

/** Runs a command to completion (bounded by `timeoutMs`) and returns its stdout. */
export function runCommand(command, args, timeoutMs) {
  return new Promise((resolve, reject) => {
    const child = track(spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? code}):\n${stderr || stdout}`));
    });
  });
}
