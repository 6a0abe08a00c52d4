/*
 * The failure policy seen over HTTP: a Nest app on a redis-server of its own, which is stopped and
 * restarted (empty) on the same port. Fail open answers 2xx without rate-limit headers, fail closed
 * answers 503 with Retry-After, the decorator's policy overrides the module's, and once Redis is back
 * every route is limited again (the functions are reloaded on the restarted server).
 */
import { Controller, Get } from '@nestjs/common';
import { SlidingLimit } from 'nestjs-sliding-limit';
import type { Response } from 'supertest';
import { freePort } from '../../support/free-port';
import { PLATFORMS, startTestApp, type TestApp } from '../../support/nest-app';
import { RedisServer, startRedisServer, startRedisServerOnPort } from '../../support/redis-server';
import { sleep } from '../../support/sleep';
import { waitFor } from '../../support/wait-for';
import { LIMITER_DEFAULTS } from '../../../lib/limiter/limiter-options';

const WINDOW_MS = 60_000;
/** The apps keep the default timeout: how long a request waits on a Redis that is down is what this file bounds. */
const TIMEOUT_MS = LIMITER_DEFAULTS.timeoutMs;
/**
 * Two attempts at most, each timed out within 1.25 × timeoutMs; the rest is HTTP and a loaded
 * two-core host's scheduling. Still well under the second Redis stays down.
 */
const QUICK_MS = 2.5 * TIMEOUT_MS + 500;

@Controller('policy')
class PolicyController {
  @Get('default')
  @SlidingLimit({ name: 'default-route', limit: 2, windowMs: WINDOW_MS })
  byModule() {
    return { ok: true };
  }

  @Get('deny')
  @SlidingLimit({ name: 'deny-route', limit: 2, windowMs: WINDOW_MS, onRedisError: 'deny' })
  deny() {
    return { ok: true };
  }

  @Get('allow')
  @SlidingLimit({ name: 'allow-route', limit: 2, windowMs: WINDOW_MS, onRedisError: 'allow' })
  allow() {
    return { ok: true };
  }
}

/** Slowest answer while Redis was down, for the report. */
let slowestDownMs = 0;

async function timedGet(app: TestApp, path: string): Promise<{ response: Response; ms: number }> {
  const started = performance.now();
  const response = await app.http().get(path);
  const ms = performance.now() - started;
  slowestDownMs = Math.max(slowestDownMs, ms);
  return { response, ms };
}

function rateLimitHeaders(response: Response): string[] {
  return Object.keys(response.headers).filter((name) => name.startsWith('x-ratelimit-'));
}

describe.each(PLATFORMS)('failure policy over HTTP while Redis is down (%s)', (platform) => {
  let first: RedisServer | undefined;
  let restarted: RedisServer | undefined;
  /** Module default policy (allow). */
  let open: TestApp | undefined;
  /** Module `onRedisError: 'deny'`. */
  let closed: TestApp | undefined;

  beforeAll(async () => {
    slowestDownMs = 0;
    first = await startRedisServer();
    open = await startTestApp({
      platform,
      controllers: [PolicyController],
      options: { redis: first.url, timeoutMs: TIMEOUT_MS },
    });
    closed = await startTestApp({
      platform,
      controllers: [PolicyController],
      options: { redis: first.url, timeoutMs: TIMEOUT_MS, onRedisError: 'deny' },
    });
  });
  afterAll(async () => {
    await open?.close();
    await closed?.close();
    await first?.stop();
    await restarted?.stop();
  });

  it('fail open answers 2xx quickly without headers, fail closed 503 with Retry-After, decorator over module; limited again after the restart', async () => {
    const apps = { open: open as TestApp, closed: closed as TestApp };
    // Redis decides: headers on every route of both apps.
    for (const app of Object.values(apps)) {
      for (const path of ['/policy/default', '/policy/deny', '/policy/allow']) {
        const response = await app.http().get(path);
        expect(response.status).toBe(200);
        expect(response.headers['x-ratelimit-limit']).toBe('2');
      }
    }

    const port = (first as RedisServer).port;
    await (first as RedisServer).stop();
    const stoppedAt = performance.now();

    // Fail open (module default): beyond the limit of 2, quickly, and without rate-limit headers.
    for (let i = 0; i < 4; i++) {
      const { response, ms } = await timedGet(apps.open, '/policy/default');
      expect(response.status).toBe(200);
      expect(rateLimitHeaders(response)).toEqual([]);
      expect(ms).toBeLessThan(QUICK_MS);
    }
    // @SlidingLimit({ onRedisError: 'deny' }) in a fail-open app: 503, a short Retry-After, no 429.
    for (let i = 0; i < 2; i++) {
      const { response, ms } = await timedGet(apps.open, '/policy/deny');
      expect(response.status).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(rateLimitHeaders(response)).toEqual([]);
      expect(ms).toBeLessThan(QUICK_MS);
    }
    // The module's onRedisError: 'deny' applies to routes whose decorator names no policy …
    const moduleDeny = await timedGet(apps.closed, '/policy/default');
    expect(moduleDeny.response.status).toBe(503);
    expect(moduleDeny.response.headers['retry-after']).toBe('1');
    expect(moduleDeny.ms).toBeLessThan(QUICK_MS);
    // … and a decorator's 'allow' overrides it.
    const decoratorAllow = await timedGet(apps.closed, '/policy/allow');
    expect(decoratorAllow.response.status).toBe(200);
    expect(rateLimitHeaders(decoratorAllow.response)).toEqual([]);
    expect(decoratorAllow.ms).toBeLessThan(QUICK_MS);

    // Redis comes back empty on the same port after about a second: no data, no functions.
    await sleep(1000 - (performance.now() - stoppedAt));
    restarted = await startRedisServerOnPort(port);
    const restartedAt = performance.now();
    const back = await untilDecided(apps.open, '/policy/default', 10_000);
    process.stdout.write(
      `${platform}: Redis down ${sec(restartedAt - stoppedAt)} s, slowest answer meanwhile ${Math.round(slowestDownMs)} ms; ` +
        `the app limited again ${sec(performance.now() - restartedAt)} s after the restart\n`,
    );
    // Restarted empty: this route's window starts over, and the limit holds again.
    expect(back.headers['x-ratelimit-remaining']).toBe('1');
    expect((await apps.open.http().get('/policy/default')).status).toBe(200);
    const limited = await apps.open.http().get('/policy/default');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');

    // Every route of both apps is decided by Redis again: 2 admitted with headers, then 429.
    for (const [app, path] of [
      [apps.open, '/policy/deny'],
      [apps.closed, '/policy/default'],
      [apps.closed, '/policy/allow'],
    ] as const) {
      const statuses = [(await untilDecided(app, path, 5000)).status];
      for (let i = 0; i < 2; i++) statuses.push((await app.http().get(path)).status);
      expect(statuses).toEqual([200, 200, 429]);
    }
  });
});

describe.each(PLATFORMS)('the module starting while Redis is down (%s)', (platform) => {
  let app: TestApp | undefined;
  let late: RedisServer | undefined;
  afterEach(async () => {
    await app?.close();
    await late?.stop();
  });

  it('comes up, answers by onRedisError meanwhile, and is limited by Redis once it starts on that port', async () => {
    // Nothing listens on the port yet: init() gets no answer, and the module starts anyway. The module
    // opens the connection; a short reconnect interval only spares the test ioredis's growing back-off.
    const port = await freePort();
    const redis = { host: '127.0.0.1', port, retryStrategy: () => 50 };
    app = await startTestApp({ platform, controllers: [PolicyController], options: { redis, timeoutMs: TIMEOUT_MS } });

    // The module's policy (allow): 2xx beyond the limit of 2, without rate-limit headers …
    for (let i = 0; i < 3; i++) {
      const response = await app.http().get('/policy/default');
      expect(response.status).toBe(200);
      expect(rateLimitHeaders(response)).toEqual([]);
    }
    // … and a decorator's 'deny' still applies.
    const denied = await app.http().get('/policy/deny');
    expect(denied.status).toBe(503);
    expect(rateLimitHeaders(denied)).toEqual([]);

    // Redis starts: the functions are loaded on the first call that reaches it, and Redis decides.
    late = await startRedisServerOnPort(port);
    const decided = await untilDecided(app, '/policy/default', 10_000);
    expect(decided.status).toBe(200);
    expect(decided.headers['x-ratelimit-limit']).toBe('2');
    expect(decided.headers['x-ratelimit-remaining']).toBe('1');
    expect((await app.http().get('/policy/default')).status).toBe(200);
    expect((await app.http().get('/policy/default')).status).toBe(429);
  });
});

/**
 * GETs `path` until Redis decides (the response carries rate-limit headers), within `timeoutMs`.
 * Only status and headers are kept, so a timeout names the last answer in a few lines.
 */
function untilDecided(app: TestApp, path: string, timeoutMs: number): Promise<Pick<Response, 'status' | 'headers'>> {
  return waitFor(
    async () => {
      const { status, headers } = await app.http().get(path);
      return { status, headers };
    },
    (response) => response.headers['x-ratelimit-limit'] !== undefined,
    { timeoutMs, intervalMs: 50 },
  );
}

function sec(ms: number): string {
  return (ms / 1000).toFixed(2);
}
