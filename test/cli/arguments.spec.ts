import { createServer, Server, Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { DEFAULT_TIMEOUT_MS } from '../../lib/cli/cli-options';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { freePort } from '../support/free-port';
import { testServerIdentity } from '../support/test-server';
import { runCli, type CliRun } from './run-cli';

const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
/** A --timeout no refused connection waits for: failing well before it is failing fast. */
const LONG_TIMEOUT_MS = 10_000;

/** Runs the CLI with that --timeout after `args`, and how long the run took. */
async function timedRun(args: string[]): Promise<{ run: CliRun; ms: number }> {
  const started = Date.now();
  const run = await runCli([...args, '--timeout', String(LONG_TIMEOUT_MS)]);
  return { run, ms: Date.now() - started };
}

describe('CLI arguments and exit codes', () => {
  it('prints the usage with --help (exit 0) and the version with --version', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: nestjs-sliding-limit functions <command> \[options\]/);
    for (const command of ['list', 'load <version>', 'status', 'delete <version>', 'dump <file>', 'restore <file>'])
      expect(help.stdout).toContain(`  ${command}`);
    expect(help.stdout).toMatch(/Exit codes:\n {2}0 {2}done\n {2}1 {2}refused or failed/);
    expect((await runCli(['functions', 'delete', '-h'])).code).toBe(0);
    const version = await runCli(['--version']);
    expect(version).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
  });

  it.each([
    [[], 'no command given'],
    [['list'], 'unknown command "list"; commands are under "functions"'],
    [['functions'], '"functions" needs a command: list, load, status, delete, dump, restore'],
    [['functions', 'drop'], 'unknown command "functions drop"'],
    [['functions', 'load'], 'functions load needs <version>'],
    [['functions', 'dump'], 'functions dump needs <file>'],
    [['functions', 'list', 'extra'], 'unexpected argument "extra" for functions list'],
    [['functions', 'list', '--frobnicate'], "Unknown option '--frobnicate'"],
    [['functions', 'list', '--replace'], '--replace does not apply to functions list (it is for: functions load)'],
    [['functions', 'load', 'v2', '--force'], '--force does not apply to functions load (it is for: functions delete)'],
    [
      ['functions', 'status', '--policy', 'flush'],
      '--policy does not apply to functions status (it is for: functions restore)',
    ],
    [['functions', 'list', '--url', 'redis://a:1', '--cluster', 'b:2'], 'give either --url or --cluster, not both'],
    [
      ['functions', 'list', '--url', 'localhost:6379'],
      '--url must be a redis:// or rediss:// URL, got "localhost:6379"',
    ],
    [
      ['functions', 'list', '--url', 'redis://:secret@h:99999'],
      '--url is not a valid URL (check the host, the port and how the password is written), got "redis://:***@h:99999"',
    ],
    [['functions', 'list', '--cluster', 'redis://h:99999'], 'cluster seed is not a valid URL'],
    [['functions', 'list', '--cluster', 'nohost'], 'cluster seed "nohost" is not host:port'],
    [['functions', 'list', '--timeout', '2s'], '--timeout must be a whole number of milliseconds'],
    [['functions', 'list', '--url'], "Option '--url <value>' argument missing"],
  ])('%j is a usage error (exit 2): %s', async (args, message) => {
    const run = await runCli(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`error: ${message}`);
    expect(run.stderr).toMatch(/Usage: nestjs-sliding-limit|Run nestjs-sliding-limit --help/);
  });

  it('reports a usage error as JSON on stdout with --json', async () => {
    const run = await runCli(['functions', 'load', 'v7', '--json']);
    expect(run.code).toBe(2);
    expect(run.json()).toEqual({
      ok: false,
      command: 'functions load',
      exitCode: 2,
      error: { kind: 'usage', message: expect.stringContaining('"v7" is not a version this package ships') },
    });
  });

  it('fails fast with exit 3 when Redis is unreachable, without printing the password', async () => {
    const port = await freePort();
    const { run, ms } = await timedRun([
      'functions',
      'list',
      '--url',
      `redis://deploy:Sup3rSecret%21@127.0.0.1:${port}`,
      '--json',
    ]);
    expect(run.code).toBe(3);
    expect(ms).toBeLessThan(LONG_TIMEOUT_MS / 2);
    expect(run.json()).toEqual({
      ok: false,
      command: 'functions list',
      exitCode: 3,
      error: {
        kind: 'connection',
        message: expect.stringContaining(
          `cannot reach Redis at redis://deploy:***@127.0.0.1:${port} (connect ECONNREFUSED`,
        ),
      },
    });
    expect(run.stderr).toContain('check --url or REDIS_URL, that Redis is running');
    for (const output of [run.stdout, run.stderr]) {
      expect(output).not.toContain('Sup3rSecret');
      expect(output).not.toContain('Sup3rSecret!');
    }
  });

  it('uses REDIS_URL when --url is not given, and redacts it too', async () => {
    const port = await freePort();
    const run = await runCli(['functions', 'status'], { REDIS_URL: `redis://:hunter2hunter2@127.0.0.1:${port}/0` });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`redis://:***@127.0.0.1:${port}/0`);
    expect(run.stderr).not.toContain('hunter2');
  });

  it('fails fast with exit 3 on unreachable cluster seeds', async () => {
    const port = await freePort();
    const { run, ms } = await timedRun(['functions', 'list', '--cluster', `127.0.0.1:${port}`]);
    expect(run.code).toBe(3);
    expect(ms).toBeLessThan(LONG_TIMEOUT_MS / 2);
    expect(run.stderr).toContain(`cannot reach Redis at the cluster at 127.0.0.1:${port}`);
    expect(run.stderr).toContain('check the --cluster seeds');
  });

  describe('against servers that do not answer as expected', () => {
    let secured: RedisServer;
    let silent: Server;
    const sockets = new Set<Socket>();
    beforeAll(async () => {
      // Started open (the helper's readiness probe does not authenticate), then locked.
      secured = await startRedisServer();
      const admin = new Redis(secured.url);
      await admin.config('SET', 'requirepass', 'correct-horse-battery');
      admin.disconnect();
      silent = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent?.close(resolve));
      await secured?.stop();
    });

    it('says authentication failed (exit 3) without echoing the wrong password', async () => {
      const run = await runCli([
        'functions',
        'list',
        '--url',
        `redis://default:wrong-password-123@127.0.0.1:${secured.port}`,
      ]);
      expect(run.code).toBe(3);
      expect(run.stderr).toMatch(/authentication to redis:\/\/default:\*\*\*@127\.0\.0\.1:\d+ failed \(WRONGPASS/);
      expect(run.stderr).toContain('check the user and password in the URL (--url or REDIS_URL)');
      expect(run.stderr).not.toContain('wrong-password-123');

      const ok = await runCli([
        'functions',
        'list',
        '--url',
        `redis://:correct-horse-battery@127.0.0.1:${secured.port}`,
      ]);
      expect(ok.code).toBe(0);
      expect(ok.stdout + ok.stderr).not.toContain('correct-horse-battery');
    });

    it('gives up on a server that never answers after --timeout (exit 3)', async () => {
      const port = (silent.address() as { port: number }).port;
      const started = Date.now();
      const run = await runCli(['functions', 'list', '--url', `redis://127.0.0.1:${port}`, '--timeout', '300']);
      expect(run.code).toBe(3);
      // By the --timeout given, not the default: its timer may fire late on a loaded host, not that late.
      expect(Date.now() - started).toBeLessThan(DEFAULT_TIMEOUT_MS);
      expect(run.stderr).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+ \(Command timed out\)/);
    });

    it('names a server without the FUNCTION command (rename-command FUNCTION ""), the cause and the fixes (exit 1)', async () => {
      const disabled = await startRedisServer(['--rename-command', 'FUNCTION', '']);
      try {
        const { name, version } = testServerIdentity();
        const run = await runCli(['functions', 'list', '--url', disabled.url, '--json']);
        expect(run.code).toBe(1);
        expect(run.json()).toMatchObject({ ok: false, exitCode: 1, error: { kind: 'failed' } });
        expect(run.stderr).toMatch(
          new RegExp(
            `^error: the server at 127\\.0\\.0\\.1:${disabled.port} \\(${name} ${version}\\) has no FUNCTION command`,
          ),
        );
        expect(run.stderr).toContain('rename-command FUNCTION');
        expect(run.stderr).toContain("EVAL works there: or set mode: 'script'");
      } finally {
        await disabled.stop();
      }
    });
  });
});
