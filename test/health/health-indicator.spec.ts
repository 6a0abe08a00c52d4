/*
 * SlidingLimitHealthIndicator against real redis-server processes: a standalone server of its own
 * (functions are flushed and deleted here, so never the shared one), a local Redis Cluster, frozen
 * and stopped servers, terminus' HealthCheckService in a Nest app, and the built package loaded
 * where @nestjs/terminus cannot be resolved.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TerminusModule } from '@nestjs/terminus';
import Redis, { Cluster } from 'ioredis';
import { type SlidingWindowLimiter, type SlidingWindowLimiterOptions } from '../../lib';
import { DEFAULT_HEALTH_TIMEOUT_MS } from '../../lib/health/sliding-limit.health';
import { nodeAddress } from '../../lib/redis/redis-nodes';
import { HealthController } from '../fixtures/health/health.controller';
import { startTestApp, PLATFORMS, type TestApp } from '../support/nest-app';
import { useRedisCluster } from '../support/redis-cluster';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { TEST_TIMEOUT_MS, testLimiter, useTestLimiters } from '../support/test-limiter';
import { testServerIdentity } from '../support/test-server';
import { uniquePrefix } from '../support/test-redis';
import { waitUntil } from '../support/wait-for';
import {
  SlidingLimitHealthIndicator,
  type SlidingLimitHealthOptions,
  type SlidingLimitHealthResult,
} from 'nestjs-sliding-limit/health';
import type { RateLimitConnection } from '../../lib/nest/rate-limit-connection';

const root = join(__dirname, '..', '..');
const silent = { log: () => undefined, warn: () => undefined };

function indicatorFor(client: Redis | Cluster, limiter: SlidingWindowLimiter): SlidingLimitHealthIndicator {
  const connection: RateLimitConnection = { client, owned: false };
  return new SlidingLimitHealthIndicator(connection, limiter);
}

/**
 * The indicator's check with the test timeout, for tests not about timeouts: a loaded host can take
 * longer than the default 500 ms to answer, and a slow master would show as unreachable.
 */
function healthOf(indicator: SlidingLimitHealthIndicator, options: SlidingLimitHealthOptions = {}) {
  return indicator.isHealthy('rateLimit', { timeoutMs: TEST_TIMEOUT_MS, ...options });
}

/** The indicator's details when every one of `nodes` answers and holds `functions` (none in script mode). */
function upOn(nodes: string[], functions: string[], mode: 'function' | 'script' = 'function') {
  return { status: 'up', mode, nodes, servers: nodes.map((node) => ({ node, ...testServerIdentity() })), functions };
}

/** Times a call, in ms. */
async function timed<T>(call: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await call();
  return { value, ms: performance.now() - started };
}

/** Waits for `client` to emit `event` (ioredis status changes). */
function nextEvent(client: Redis, event: string): Promise<void> {
  return new Promise((resolve) => client.once(event, () => resolve()));
}

describe('SlidingLimitHealthIndicator: standalone Redis', () => {
  let server: RedisServer;
  let admin: Redis;
  let address: string;
  let opened: Redis[] = [];
  const limiters = useTestLimiters(() => ({
    keyPrefix: uniquePrefix('health'),
    functionName: 'sliding_allow_v2', // the function these tests look for
    logger: silent,
  }));

  const limiterOn = async (options: SlidingWindowLimiterOptions = {}) => {
    const client = new Redis(server.url);
    client.on('error', () => undefined);
    opened.push(client);
    const limiter = limiters({ client, ...options });
    await limiter.init();
    return { client, limiter, indicator: indicatorFor(client, limiter) };
  };

  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
    address = `127.0.0.1:${server.port}`;
  });
  beforeEach(async () => {
    await admin.function('FLUSH');
  });
  afterEach(async () => {
    await Promise.all(opened.map((client) => client.quit().catch(() => client.disconnect())));
    opened = [];
  });
  afterAll(async () => {
    await admin?.quit();
    await server?.stop();
  });

  it('is up when the server answers and the active function is loaded, under the key given', async () => {
    const { indicator } = await limiterOn();

    expect(await healthOf(indicator)).toEqual({ rateLimit: upOn([address], ['sliding_allow_v2']) });
    const custom: SlidingLimitHealthResult<'redis-limits'> = await indicator.isHealthy('redis-limits', {
      timeoutMs: TEST_TIMEOUT_MS,
    });
    expect(custom['redis-limits'].status).toBe('up');
  });

  it('ignores a canary that takes no traffic (0 %), before the limiter has started too', async () => {
    await limiterOn(); // loads rate_limit_v2 only
    const client = new Redis(server.url);
    opened.push(client);
    await client.ping();
    const idle = limiters({ client, canary: { functionName: 'sliding_allow_v1', percent: 0 } });

    expect(idle.canary).toEqual({ functionName: 'sliding_allow_v1', percent: 0 }); // not started: as configured
    const { rateLimit } = await healthOf(indicatorFor(client, idle));
    expect(rateLimit.message).toBeUndefined();
    expect(rateLimit).toMatchObject({ status: 'up', functions: ['sliding_allow_v2'] });
  });

  it('checks the canary too: down naming the function, its library, the node and the load command when it is missing', async () => {
    const { indicator } = await limiterOn({
      functionName: 'sliding_allow_v2',
      canary: { functionName: 'sliding_allow_v1', percent: 10 },
    });
    expect((await healthOf(indicator)).rateLimit).toMatchObject({
      status: 'up',
      functions: ['sliding_allow_v2', 'sliding_allow_v1'],
    });

    await admin.function('DELETE', 'rate_limit_v1');

    const { rateLimit } = await healthOf(indicator);
    expect(rateLimit).toMatchObject({
      status: 'down',
      nodes: [address],
      missing: [{ node: address, functionName: 'sliding_allow_v1', libraryName: 'rate_limit_v1' }],
    });
    expect(rateLimit.unreachable).toBeUndefined();
    expect(rateLimit.message).toBe(
      `sliding_allow_v1 (library rate_limit_v1) is not loaded on ${address}; load it on each: ` +
        `npx nestjs-sliding-limit functions load v1 --url redis://${address} ` +
        `(or redis-cli -u redis://${address} -x FUNCTION LOAD < node_modules/nestjs-sliding-limit/dist/redis/lua/rate_limit_v1.lua)`,
    );
  });

  it('a library whose name merely matches as a pattern, or that lacks the function, does not count', async () => {
    const { indicator } = await limiterOn({ functionName: 'sliding_allow_v1' });
    await admin.function('DELETE', 'rate_limit_v1');
    // Same library name, other function: what a broken hand edit leaves behind.
    await admin.function(
      'LOAD',
      "#!lua name=rate_limit_v1\nredis.register_function('something_else', function() return 1 end)\n",
    );

    expect((await healthOf(indicator)).rateLimit.missing).toEqual([
      { node: address, functionName: 'sliding_allow_v1', libraryName: 'rate_limit_v1' },
    ]);
  });

  it('in script mode only reachability counts: up with no function loaded', async () => {
    const { indicator, limiter } = await limiterOn({ mode: 'script' });
    expect(limiter.mode).toBe('script');
    expect((await admin.function('LIST')) as unknown[]).toEqual([]);

    expect(await healthOf(indicator)).toEqual({ rateLimit: upOn([address], [], 'script') });
  });

  it('a server without the FUNCTION command (rename-command FUNCTION "") is down, saying so and how to fix it', async () => {
    const own = await startRedisServer(['--rename-command', 'FUNCTION', '']);
    try {
      const client = new Redis(own.url);
      opened.push(client);
      // 'off': start-up checks nothing (it would fail with FunctionsUnavailableError); the probe still looks.
      const limiter = limiters({ client, loadFunctions: 'off' });
      await limiter.init();
      const ownAddress = `127.0.0.1:${own.port}`;

      const { rateLimit } = await healthOf(indicatorFor(client, limiter));

      expect(rateLimit).toMatchObject({ status: 'down', servers: [{ node: ownAddress, ...testServerIdentity() }] });
      expect(rateLimit.unreachable).toEqual([{ node: ownAddress, error: expect.any(String) }]);
      const { name, version } = testServerIdentity();
      expect(rateLimit.unreachable?.[0].error).toMatch(
        new RegExp(`^the server at ${ownAddress} \\(${name} ${version}\\) has no FUNCTION command .*mode: 'script'`),
      );
    } finally {
      await Promise.all(opened.map((client) => client.quit().catch(() => client.disconnect())));
      opened = [];
      await own.stop();
    }
  });

  it('is down while the limiter decides without Redis (since when, how many, the last cause), up once the latest is older than degradedWindowMs', async () => {
    // A caller clock behind a key's newest entry: v2 refuses with CLOCKSKEW, and onRedisError allows.
    let now = 1_735_660_800_000;
    const { indicator, limiter } = await limiterOn({ clock: () => now, maxClockSkewMs: 0 });
    await limiter.consume('k', { limit: 10, windowMs: 60_000 });
    now -= 5;
    const startedAt = Date.now();
    for (let i = 0; i < 3; i++)
      expect((await limiter.consume('k', { limit: 10, windowMs: 60_000 })).degraded).toBe('allow');

    // Ten seconds: the check below comes well inside them, however slow a loaded host is.
    const { rateLimit } = await healthOf(indicator, { degradedWindowMs: 10_000 });
    expect(rateLimit).toMatchObject({
      status: 'down',
      nodes: [address],
      functions: ['sliding_allow_v2'],
      degraded: { decisions: 3, byKind: { allow: 3 }, lastCause: expect.stringMatching(/^CLOCKSKEW /) },
    });
    expect(Date.parse(rateLimit.degraded!.since)).toBeGreaterThanOrEqual(startedAt - 1);
    expect(Date.parse(rateLimit.degraded!.latest)).toBeGreaterThanOrEqual(Date.parse(rateLimit.degraded!.since));
    expect(rateLimit.unreachable).toBeUndefined();
    expect(rateLimit.missing).toBeUndefined();
    expect(rateLimit.message).toMatch(
      /^3 decisions made without Redis since \S+ \(3 by allow\), the latest \d+\.\d s ago: CLOCKSKEW /,
    );
    // 0 leaves degraded decisions out of the check.
    expect((await healthOf(indicator, { degradedWindowMs: 0 })).rateLimit.status).toBe('up');

    await waitUntil(async () => (await healthOf(indicator, { degradedWindowMs: 300 })).rateLimit.status === 'up');
    expect(Date.now() - Date.parse(rateLimit.degraded!.latest)).toBeGreaterThanOrEqual(300);
  });

  it('a frozen server (SIGSTOP) is down within the timeout, naming it; up again after SIGCONT', async () => {
    const { indicator } = await limiterOn();
    server.process.kill('SIGSTOP');
    try {
      const { value, ms } = await timed(() => indicator.isHealthy('rateLimit', { timeoutMs: 200 }));
      expect(value.rateLimit).toMatchObject({
        status: 'down',
        unreachable: [{ node: address, error: 'Redis did not answer within 200 ms' }],
      });
      expect(value.rateLimit.message).toBe(`Redis unreachable: ${address} (Redis did not answer within 200 ms)`);
      expect(ms).toBeGreaterThanOrEqual(195);
      // Given up when its own timer fired (late, as a loaded host fires timers), not at SIGCONT.
      expect(ms).toBeLessThan(200 + 1000);
    } finally {
      server.process.kill('SIGCONT');
    }
    expect((await healthOf(indicator)).rateLimit.status).toBe('up');
  });

  it('a stopped server is down at once (nothing queued behind the reconnecting client)', async () => {
    const own = await startRedisServer();
    const client = new Redis(own.url, { retryStrategy: () => 100 });
    client.on('error', () => undefined);
    opened.push(client);
    // No instance report (the test settings): its first SET may still be in flight when the server stops.
    const limiter = limiters({ client });
    await limiter.init();
    const indicator = indicatorFor(client, limiter);
    const ownAddress = `127.0.0.1:${own.port}`;

    const closed = nextEvent(client, 'close');
    await own.stop();
    await closed;

    const { value, ms } = await timed(() => healthOf(indicator));
    expect(value.rateLimit).toMatchObject({
      status: 'down',
      nodes: [ownAddress],
      unreachable: [
        { node: ownAddress, error: expect.stringMatching(/^the connection is (reconnecting|connecting|close)$/) },
      ],
    });
    expect(value.rateLimit.message).toContain(`Redis unreachable: ${ownAddress}`);
    // Without waiting: a check queued behind the reconnecting client would last its whole timeout.
    expect(ms).toBeLessThan(DEFAULT_HEALTH_TIMEOUT_MS / 2);
    expect(client.commandQueue.length).toBe(0);
  });
});

describe('SlidingLimitHealthIndicator: Redis Cluster (3 masters + 3 replicas)', () => {
  // A master is frozen below without meaning a failover: no node timeout a loaded host could reach.
  const own = useRedisCluster({ nodeTimeoutMs: 15_000 });
  let client: Cluster;
  let limiter: SlidingWindowLimiter;
  let indicator: SlidingLimitHealthIndicator;
  let masters: Redis[];

  beforeAll(async () => {
    client = own.client();
    limiter = testLimiter({
      client,
      keyPrefix: uniquePrefix('health-cluster'),
      functionName: 'sliding_allow_v2',
      logger: silent,
      onRedisError: 'throw',
    });
    await limiter.init();
    indicator = indicatorFor(client, limiter);
    masters = client.nodes('master');
  });
  afterAll(() => limiter?.close());

  const addresses = () => masters.map(nodeAddress).sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));

  it('is up after init(): every master answers and holds the function', async () => {
    expect(masters).toHaveLength(3);
    expect(await healthOf(indicator)).toEqual({ rateLimit: upOn(addresses(), ['sliding_allow_v2']) });
  });

  it('names exactly the master that lacks the function; the limiter reloads it there on its next call, and health is up again', async () => {
    const [, victim] = masters;
    await victim.function('DELETE', 'rate_limit_v2');

    const { rateLimit } = await healthOf(indicator);
    expect(rateLimit).toMatchObject({
      status: 'down',
      nodes: addresses(),
      missing: [{ node: nodeAddress(victim), functionName: 'sliding_allow_v2', libraryName: 'rate_limit_v2' }],
    });
    expect(rateLimit.message).toContain(`is not loaded on ${nodeAddress(victim)};`);

    // Keys over every slot range: one of them reaches the victim, whose "Function not found" reloads it.
    for (let i = 0; i < 30; i++) await limiter.consume(`spread:${i}`, { limit: 10, windowMs: 1000 });
    expect((await healthOf(indicator)).rateLimit.status).toBe('up');
  });

  it('a frozen master is named as unreachable; the others are not', async () => {
    const [, , victim] = masters;
    const process = own.cluster().nodes.find((node) => node.port === victim.options.port)!.process;
    // Frozen for well under cluster-node-timeout (15 s here): no failover starts.
    process.kill('SIGSTOP');
    let result: SlidingLimitHealthResult<'rateLimit'>;
    try {
      // Long enough for the healthy masters of a loaded host, which must not show as unreachable.
      result = await indicator.isHealthy('rateLimit', { timeoutMs: 1000 });
    } finally {
      process.kill('SIGCONT');
    }
    expect(result.rateLimit).toMatchObject({
      status: 'down',
      nodes: addresses(),
      unreachable: [{ node: nodeAddress(victim), error: 'Redis did not answer within 1000 ms' }],
    });
    expect(result.rateLimit.missing).toBeUndefined();
    expect((await healthOf(indicator)).rateLimit.status).toBe('up');
  });
});

describe.each(PLATFORMS)('SlidingLimitHealthIndicator in a Nest app with terminus (%s)', (platform) => {
  let server: RedisServer;
  let admin: Redis;
  let app: TestApp;

  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
    app = await startTestApp({
      platform,
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: [HealthController],
      providers: [SlidingLimitHealthIndicator],
      options: { redis: server.url, functionName: 'sliding_allow_v2' },
    });
  });
  afterAll(async () => {
    await app?.close();
    await admin?.quit();
    await server?.stop();
  });

  it('GET /health is 200 with the indicator under "rateLimit", and 503 naming the node once the function is gone', async () => {
    const address = `127.0.0.1:${server.port}`;
    const ok = await app.http().get('/health');
    expect(ok.status).toBe(200);
    const up = upOn([address], ['sliding_allow_v2']);
    expect(ok.body).toEqual({ status: 'ok', info: { rateLimit: up }, error: {}, details: { rateLimit: up } });

    await admin.function('FLUSH');

    const failing = await app.http().get('/health');
    expect(failing.status).toBe(503);
    expect(failing.body.status).toBe('error');
    expect(failing.body.error.rateLimit).toMatchObject({
      status: 'down',
      missing: [{ node: address, functionName: 'sliding_allow_v2', libraryName: 'rate_limit_v2' }],
    });
  });
});

describe('the built package without @nestjs/terminus', () => {
  beforeAll(() => {
    if (!existsSync(join(root, 'dist', 'health', 'sliding-limit.health.js'))) {
      throw new Error('dist/ is missing or stale: run `npm run build` (npm test does it)');
    }
  });

  it('loads the package and its health entry point; only constructing the indicator asks for terminus, naming the install command', () => {
    // What an application without terminus sees: the module cannot be resolved from anywhere.
    const script = `
      const Module = require('node:module');
      const resolve = Module._resolveFilename;
      Module._resolveFilename = function (request, ...rest) {
        if (request === '@nestjs/terminus' || request.startsWith('@nestjs/terminus/')) {
          throw Object.assign(new Error("Cannot find module '" + request + "'"), { code: 'MODULE_NOT_FOUND' });
        }
        return resolve.call(this, request, ...rest);
      };
      let resolvable = true;
      try { require.resolve('@nestjs/terminus'); } catch { resolvable = false; }
      const lib = require('./dist/index.js');
      const health = require('./dist/health/index.js');
      let error;
      try { new health.SlidingLimitHealthIndicator({ owned: false }, undefined); } catch (e) { error = e; }
      console.log(JSON.stringify({
        resolvable,
        indicator: typeof health.SlidingLimitHealthIndicator,
        limiter: typeof lib.SlidingWindowLimiter,
        module: typeof lib.RateLimitModule,
        configError: error instanceof lib.RateLimitConfigError,
        message: error && error.message,
        terminusLoaded: Object.keys(require.cache).some((path) => path.includes('@nestjs/terminus')),
      }));
    `;
    const output = JSON.parse(
      execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' }),
    ) as Record<string, unknown>;

    expect(output).toEqual({
      resolvable: false,
      indicator: 'function',
      limiter: 'function',
      module: 'function',
      configError: true,
      message: expect.stringContaining(
        'SlidingLimitHealthIndicator needs @nestjs/terminus (an optional peer dependency of nestjs-sliding-limit): npm install @nestjs/terminus',
      ),
      terminusLoaded: false,
    });
  });

  it('its declarations never import @nestjs/terminus (a TypeScript app without it still compiles)', () => {
    for (const file of ['index.d.ts', join('health', 'index.d.ts'), join('health', 'sliding-limit.health.d.ts')]) {
      const declarations = readFileSync(join(root, 'dist', file), 'utf8');
      expect(declarations).not.toMatch(/(from|import\(|require\()\s*['"]@nestjs\/terminus/);
    }
    expect(readFileSync(join(root, 'dist', 'health', 'index.d.ts'), 'utf8')).toContain('SlidingLimitHealthIndicator');
  });
});
