import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { readLibrarySource } from '../../lib/redis/lua-library';
import { useOwnRedisServer } from '../support/own-redis';
import { listLibraries } from '../support/redis-inspect';
import type { RedisServer } from '../support/redis-server';
import { testServerIdentity } from '../support/test-server';
import { runCli } from './run-cli';

const V1 = readLibrarySource('rate_limit_v1.lua');
const V2 = readLibrarySource('rate_limit_v2.lua');
const EXTRA = "#!lua name=extra_lib\nredis.register_function('extra_fn', function() return 1 end)";

/** The code of each library of a node, by name; read by the test's own parser, not the CLI's. */
async function libraries(redis: Redis): Promise<Record<string, string>> {
  return Object.fromEntries((await listLibraries(redis)).map((library) => [library.name, library.code]));
}

describe('functions dump and restore (standalone)', () => {
  const own = useOwnRedisServer();
  let server: RedisServer;
  let redis: Redis;
  let url: string;
  let dir: string;
  let file: string;

  beforeAll(() => {
    server = own.server();
    redis = own.connect();
    url = server.url;
    dir = mkdtempSync(join(tmpdir(), 'nsl-dump-'));
    file = join(dir, 'functions.rdb');
  });
  beforeEach(async () => {
    await redis.function('FLUSH');
    await redis.call('FUNCTION', 'LOAD', V1);
    await redis.call('FUNCTION', 'LOAD', V2);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('dumps the exact FUNCTION DUMP bytes (binary, not text) and says how to restore', async () => {
    const run = await runCli(['functions', 'dump', file, '--url', url]);
    expect(run.code).toBe(0);
    const written = readFileSync(file);
    const direct = await redis.callBuffer('FUNCTION', 'DUMP');
    expect(Buffer.isBuffer(direct)).toBe(true);
    expect(written.equals(direct as Buffer)).toBe(true);
    // The payload is not valid UTF-8 (RDB opcodes, CRC64): decoding it as text would corrupt it.
    expect(Buffer.from(written.toString('utf8'), 'utf8').equals(written)).toBe(false);
    expect(run.stdout).toContain(
      `Wrote ${written.length} bytes to ${file}: rate_limit_v1, rate_limit_v2, from 127.0.0.1:${server.port}.`,
    );
    expect(run.stdout).toContain(
      `Restore with: npx nestjs-sliding-limit functions restore ${file} --policy append --url ${url}`,
    );

    const json = await runCli(['functions', 'dump', file, '--url', url, '--json']);
    expect(json.json()).toEqual({
      ok: true,
      command: 'functions dump',
      exitCode: 0,
      servers: [{ node: `127.0.0.1:${server.port}`, ...testServerIdentity() }],
      file,
      bytes: written.length,
      node: `127.0.0.1:${server.port}`,
      libraries: ['rate_limit_v1', 'rate_limit_v2'],
    });
  });

  it('dump → FUNCTION FLUSH → restore (append) brings every library back, byte for byte', async () => {
    expect((await runCli(['functions', 'dump', file, '--url', url])).code).toBe(0);
    await redis.function('FLUSH');
    expect(await libraries(redis)).toEqual({});

    const run = await runCli(['functions', 'restore', file, '--url', url, '--json']);
    expect(run.code).toBe(0);
    expect(run.json()).toEqual({
      ok: true,
      command: 'functions restore',
      exitCode: 0,
      servers: [{ node: `127.0.0.1:${server.port}`, ...testServerIdentity() }],
      file,
      bytes: readFileSync(file).length,
      policy: 'append',
      nodes: [{ node: `127.0.0.1:${server.port}`, result: 'restored', libraries: ['rate_limit_v1', 'rate_limit_v2'] }],
    });
    expect(await libraries(redis)).toEqual({ rate_limit_v1: V1, rate_limit_v2: V2 });
    expect(await redis.fcall('sliding_allow_v1', 1, 'restored:k', Date.now(), 1000, 5, 'm1')).toEqual([1, 4]);
  });

  it('append refuses libraries that exist (exit 1, with the other policies named); replace overwrites them', async () => {
    expect((await runCli(['functions', 'dump', file, '--url', url])).code).toBe(0);
    const patched = `${V1}\n-- patched\n`;
    await redis.call('FUNCTION', 'LOAD', 'REPLACE', patched);

    const append = await runCli(['functions', 'restore', file, '--url', url, '--policy', 'append']);
    expect(append.code).toBe(1);
    expect(append.stdout).toMatch(/failed\s+ERR Library rate_limit_v\d already exists/);
    expect(append.stdout).toContain(
      '--policy replace overwrites them, --policy flush makes each master hold exactly the dump',
    );
    expect(append.stderr).toBe(`error: FUNCTION RESTORE failed on 127.0.0.1:${server.port}\n`);
    expect((await libraries(redis)).rate_limit_v1).toBe(patched);

    const replace = await runCli(['functions', 'restore', file, '--url', url, '--policy', 'REPLACE']);
    expect(replace.code).toBe(0);
    expect(replace.stdout).toMatch(/restored\s+now holds: rate_limit_v1, rate_limit_v2/);
    expect(await libraries(redis)).toEqual({ rate_limit_v1: V1, rate_limit_v2: V2 });
  });

  it('replace keeps libraries missing from the dump; flush removes them', async () => {
    await redis.function('DELETE', 'rate_limit_v2');
    expect((await runCli(['functions', 'dump', file, '--url', url])).code).toBe(0); // v1 only
    await redis.call('FUNCTION', 'LOAD', V2);
    await redis.call('FUNCTION', 'LOAD', EXTRA);

    expect((await runCli(['functions', 'restore', file, '--url', url, '--policy', 'replace'])).code).toBe(0);
    expect(Object.keys(await libraries(redis)).sort()).toEqual(['extra_lib', 'rate_limit_v1', 'rate_limit_v2']);

    const flush = await runCli(['functions', 'restore', file, '--url', url, '--policy', 'flush', '--json']);
    expect(flush.code).toBe(0);
    expect(flush.json<{ policy: string; nodes: unknown[] }>()).toMatchObject({
      policy: 'flush',
      nodes: [{ result: 'restored', libraries: ['rate_limit_v1'] }],
    });
    expect(await libraries(redis)).toEqual({ rate_limit_v1: V1 });
  });

  it('an empty server dumps an empty payload that restores to nothing', async () => {
    await redis.function('FLUSH');
    const run = await runCli(['functions', 'dump', file, '--url', url]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('no libraries (an empty dump)');
    await redis.call('FUNCTION', 'LOAD', EXTRA);
    expect((await runCli(['functions', 'restore', file, '--url', url, '--policy', 'flush'])).code).toBe(0);
    expect(await libraries(redis)).toEqual({});
  });

  it('a corrupt payload is refused by Redis and leaves the libraries alone (exit 1)', async () => {
    const good = await redis.callBuffer('FUNCTION', 'DUMP');
    const corrupt = Buffer.from(good as Buffer);
    corrupt[corrupt.length - 1] ^= 0xff; // break the checksum
    const path = join(dir, 'corrupt.rdb');
    writeFileSync(path, corrupt);
    const run = await runCli(['functions', 'restore', path, '--url', url, '--policy', 'flush', '--json']);
    expect(run.code).toBe(1);
    expect(run.json()).toMatchObject({
      ok: false,
      nodes: [{ result: 'failed', error: expect.stringMatching(/payload version or checksum are wrong/) }],
      error: { kind: 'failed' },
    });
    expect(Object.keys(await libraries(redis)).sort()).toEqual(['rate_limit_v1', 'rate_limit_v2']);
  });

  it('a missing dump file fails before connecting (exit 1); a bad policy is a usage error (exit 2)', async () => {
    const missing = await runCli(['functions', 'restore', join(dir, 'nope.rdb'), '--url', 'redis://127.0.0.1:1']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: cannot read .*nope\.rdb: ENOENT/);
    const policy = await runCli(['functions', 'restore', file, '--url', url, '--policy', 'merge']);
    expect(policy.code).toBe(2);
    expect(policy.stderr).toContain('--policy must be one of append, replace, flush, got "merge"');
    const unwritable = await runCli(['functions', 'dump', join(dir, 'no', 'such', 'dir.rdb'), '--url', url]);
    expect(unwritable.code).toBe(1);
    expect(unwritable.stderr).toMatch(/^error: cannot write .*dir\.rdb: ENOENT/);
  });
});
