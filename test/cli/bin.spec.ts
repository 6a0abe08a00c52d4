import { execFile, execFileSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import { parseFunctionList } from '../../lib/redis/reply';
import { freePort } from '../support/free-port';
import { RedisServer, startRedisServer } from '../support/redis-server';

/*
 * The CLI as users run it: the package's bin, through Node, against the built dist/
 * (`npm test` builds first; a missing build is made here).
 */
const root = join(__dirname, '..', '..');
const bin = join(root, 'bin', 'nestjs-sliding-limit.js');
const run = promisify(execFile);

type Exited = { code: number; stdout: string; stderr: string };

/** Runs the bin as a user does, through Node. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Exited> {
  return node([bin, ...args], env);
}

/** Runs Node on `args` (a script with `-e` when given a string) in the package root, with its exit code. */
async function node(args: string[] | string, env: NodeJS.ProcessEnv = {}): Promise<Exited> {
  try {
    const { stdout, stderr } = await run(process.execPath, typeof args === 'string' ? ['-e', args] : args, {
      cwd: root,
      env: { PATH: process.env.PATH, ...env },
      timeout: 10_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout: string; stderr: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('the nestjs-sliding-limit bin', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    await redis?.quit();
    await server?.stop();
  });

  it('is declared in package.json, shipped, executable and starts with a node shebang', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
      files: string[];
    };
    expect(pkg.bin).toEqual({ 'nestjs-sliding-limit': 'bin/nestjs-sliding-limit.js' });
    expect(pkg.files).toContain('bin');
    expect(readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(() => accessSync(bin, constants.X_OK)).not.toThrow();
    const [{ files }] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' }),
    ) as [{ files: { path: string }[] }];
    expect(files.map((f) => f.path)).toEqual(
      expect.arrayContaining(['bin/nestjs-sliding-limit.js', 'dist/cli/main.js', 'dist/redis/lua/rate_limit_v2.lua']),
    );
  });

  it('loads, lists and deletes through the built CLI, with the exit codes the docs promise', async () => {
    const load = await cli(['functions', 'load', 'v2', '--url', server.url]);
    expect(load).toMatchObject({ code: 0, stderr: '' });
    expect(parseFunctionList(await redis.call('FUNCTION', 'LIST')).map((l) => l.name)).toEqual(['rate_limit_v2']);

    const list = await cli(['functions', 'list', '--json'], { REDIS_URL: server.url });
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toMatchObject({
      ok: true,
      command: 'functions list',
      nodes: [{ node: `127.0.0.1:${server.port}`, libraries: [{ library: 'rate_limit_v2', matchesBundled: true }] }],
    });

    const del = await cli(['functions', 'delete', 'v2', '--url', server.url]);
    expect(del.code).toBe(0);
    expect(await redis.call('FUNCTION', 'LIST')).toEqual([]);
  });

  it('exits 2 with the usage on bad arguments, 0 on --help', async () => {
    const bad = await cli(['functions', 'frobnicate']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('error: unknown command "functions frobnicate"');
    expect(bad.stderr).toContain('Usage: nestjs-sliding-limit functions <command>');
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
  });

  it.each([
    ['--help', ['--help']],
    ['--version', ['--version']],
    ['a usage error', ['functions', 'frobnicate']],
    ['an unknown version to load', ['functions', 'load', 'v99']],
  ])('%s loads no Redis client and no command: what it prints needs neither', (_label, args) => {
    // Each run of the bin pays for what it requires at start-up (ioredis is most of it).
    const script = [
      `require(${JSON.stringify(join(root, 'dist', 'cli', 'main.js'))})`,
      `  .main(${JSON.stringify(args)}, { stdout: () => undefined, stderr: () => undefined, env: {} })`,
      '  .then(() => {',
      "    const loaded = Object.keys(require.cache).map((file) => file.replace(/\\\\/g, '/'));",
      '    console.log(JSON.stringify(loaded.filter((file) => /node_modules\\/ioredis\\/|\\/dist\\/cli\\/(commands|doctor)\\//.test(file))));',
      '  });',
    ].join('\n');
    const loaded = JSON.parse(
      execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' }),
    ) as string[];
    expect(loaded).toEqual([]);
  });

  it('exits 3 quickly when Redis is unreachable: the process does not linger on client timers', async () => {
    const port = await freePort();
    const args = ['functions', 'status', '--url', `redis://ops:p4ssw0rd-xyz@127.0.0.1:${port}`];
    const result = await cli(args);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`cannot reach Redis at redis://ops:***@127.0.0.1:${port}`);
    expect(result.stderr).not.toContain('p4ssw0rd-xyz');

    // How long the process lives on once the command has ended, which is what a client timer left
    // running (a reconnect, ioredis' 2 s wait for a socket to close) would stretch. Node's start-up,
    // which a loaded host stretches too, is not part of it.
    const script = [
      `const { main } = require(${JSON.stringify(join(root, 'dist', 'cli', 'main.js'))});`,
      'let endedAt;',
      "process.on('exit', () => process.stdout.write(String(performance.now() - endedAt)));",
      `main(${JSON.stringify(args)}, { stdout: () => undefined, stderr: () => undefined, env: {} }).then((code) => {`,
      '  endedAt = performance.now();',
      '  process.exitCode = code;',
      '});',
    ].join('\n');
    const lingered = await node(script);
    expect(lingered.code).toBe(3);
    expect(Number(lingered.stdout)).toBeLessThan(500);
  });
});
