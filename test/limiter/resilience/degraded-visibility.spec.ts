/*
 * A degraded decision — made by the failure policy or the insurance limiter, not by Redis — is
 * visible: in the health check, in the metrics (the limiter's own and Prometheus), on the response
 * (module option `headers: { degraded: true }`) and to decision listeners. The scenario is the one a user
 * reported: a Redis out of memory under `maxmemory-policy noeviction` refuses every write, so every
 * request is let through by `onRedisError: 'allow'`, while PING and FUNCTION LIST still answer.
 */
import { TerminusModule } from '@nestjs/terminus';
import Redis from 'ioredis';
import { Registry } from 'prom-client';
import { SlidingWindowLimiter, type DecisionEvent } from '../../../lib';
import { HealthController } from '../../fixtures/health/health.controller';
import { LimitedController } from '../../fixtures/limits/limited.controller';
import { PLATFORMS, startTestApp, type TestApp } from '../../support/nest-app';
import { samples } from '../../support/prometheus-samples';
import { startRedisServer, type RedisServer } from '../../support/redis-server';
import { RateLimitPrometheusModule } from 'nestjs-sliding-limit/prometheus';
import { SlidingLimitHealthIndicator } from 'nestjs-sliding-limit/health';

/**
 * Fills Redis past its `maxmemory` (noeviction): 4 MB of values, then a limit of 1 MB. Filling up to
 * the limit alone is not enough: Redis refuses a write only while it is over the limit, and the
 * refused write's own buffers, once freed, leave room for a few more.
 */
async function fillPastMaxmemory(client: Redis): Promise<void> {
  const value = 'x'.repeat(16_384);
  for (let i = 0; i < 256; i++) await client.set(`fill:${i}`, value);
  await client.config('SET', 'maxmemory', '1mb');
  await expect(client.set('one-more', 'x')).rejects.toThrow(/^OOM command not allowed/);
}

describe.each(PLATFORMS)('a Redis out of memory that refuses every write (%s)', (platform) => {
  let server: RedisServer;
  let admin: Redis;
  let app: TestApp;
  let registry: Registry;

  beforeAll(async () => {
    server = await startRedisServer(['--maxmemory-policy', 'noeviction']);
    admin = new Redis(server.url);
    registry = new Registry();
    app = await startTestApp({
      platform,
      imports: [TerminusModule.forRoot({ logger: false }), RateLimitPrometheusModule.forRoot({ registry })],
      controllers: [LimitedController, HealthController],
      providers: [SlidingLimitHealthIndicator],
      options: {
        redis: server.url,
        functionName: 'sliding_allow_v2',
        headers: { degraded: true },
        report: false,
        logger: { log: () => {}, warn: () => {} },
      },
    });
  });
  afterAll(async () => {
    await app?.close();
    await admin?.quit();
    await server?.stop();
  });

  it('every degraded decision shows: the response header, listeners, the limiter metrics, Prometheus and the health check', async () => {
    const limiter = app.app.get(SlidingWindowLimiter);
    const events: DecisionEvent[] = [];
    const stopListening = limiter.onDecision((event) => events.push(event));

    // Redis decides: no degraded header, health up, the gauge at 0.
    const decided = await app.http().get('/limited');
    expect(decided.status).toBe(200);
    expect(decided.headers['x-ratelimit-remaining']).toBe('1');
    expect(decided.headers['x-ratelimit-degraded']).toBeUndefined();
    expect((await app.http().get('/health')).status).toBe(200);
    expect(samples(await registry.metrics()).get('sliding_limit_degraded')).toBe(0);

    await fillPastMaxmemory(admin);
    const filledAt = Date.now();

    // Four requests on a limit of 2 (one already counted): all let through by the policy, each saying so.
    for (let i = 0; i < 4; i++) {
      const response = await app.http().get('/limited');
      expect(response.status).toBe(200);
      expect(response.headers['x-ratelimit-degraded']).toBe('allow');
      expect(response.headers['x-ratelimit-remaining']).toBeUndefined();
    }
    const denied = await app.http().get('/limited/deny');
    expect(denied.status).toBe(503);
    expect(denied.headers['x-ratelimit-degraded']).toBe('deny');

    // Listeners: each decision, its kind and why Redis did not make it.
    expect(events.map((event) => [event.degraded, event.degradedCause])).toEqual([
      [undefined, undefined],
      ...Array.from({ length: 4 }, () => ['allow', 'redis']),
      ['deny', 'redis'],
    ]);
    stopListening();

    // The limiter's own view.
    const status = limiter.status();
    expect(status.degraded).toEqual({
      sinceMs: expect.any(Number),
      lastMs: expect.any(Number),
      decisions: { allow: 4, deny: 1, insurance: 0 },
      lastCause: { kind: 'redis', message: expect.stringMatching(/^OOM command not allowed/) },
    });
    expect(status.degraded!.sinceMs).toBeGreaterThanOrEqual(filledAt);
    expect(limiter.metrics.snapshot()[0].fallbacks).toEqual({ allow: 4, deny: 1 });

    // Prometheus.
    const values = samples(await registry.metrics());
    expect(values.get('sliding_limit_degraded')).toBe(1);
    expect(values.get('sliding_limit_degraded_decisions_total{function="sliding_allow_v2",kind="allow"}')).toBe(4);
    expect(values.get('sliding_limit_degraded_decisions_total{function="sliding_allow_v2",kind="deny"}')).toBe(1);

    // The health check: down, saying since when, how many, and the last cause.
    const health = await app.http().get('/health');
    expect(health.status).toBe(503);
    const rateLimit = health.body.error.rateLimit as Record<string, unknown>;
    expect(rateLimit).toMatchObject({
      status: 'down',
      degraded: {
        since: new Date(status.degraded!.sinceMs).toISOString(),
        latest: new Date(status.degraded!.lastMs).toISOString(),
        decisions: 5,
        byKind: { allow: 4, deny: 1 },
        lastCause: expect.stringMatching(/^OOM command not allowed/),
      },
    });
    expect(rateLimit.unreachable).toBeUndefined();
    expect(rateLimit.missing).toBeUndefined();
    expect(rateLimit.message).toMatch(
      /^5 decisions made without Redis since \S+Z \(4 by allow, 1 by deny\), the latest \d+\.\d s ago: OOM command not allowed/,
    );
  });
});
