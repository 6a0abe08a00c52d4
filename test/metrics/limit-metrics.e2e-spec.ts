import { Controller, Get } from '@nestjs/common';
import { Registry } from 'prom-client';
import { RateLimitModule, SlidingLimit } from 'nestjs-sliding-limit';
import { RateLimitOpenTelemetryModule } from 'nestjs-sliding-limit/opentelemetry';
import { RedisOverridesStore } from '../../lib/redis/overrides-store';
import { startOtel, valueOf, type OtelHarness } from '../opentelemetry/otel-harness';
import { PLATFORMS, startTestApp, type TestApp } from '../support/nest-app';
import { samples } from '../support/prometheus-samples';
import { useRestartableRedis } from '../support/restartable-redis';
import { TEST_LIMITER_SETTINGS } from '../support/test-limiter';
import { connectShared, uniquePrefix } from '../support/test-redis';
import { RateLimitPrometheusModule } from 'nestjs-sliding-limit/prometheus';

/** Twins: the same limit enforced on one route and in shadow on another; a limit with a candidate. */
@Controller('twins')
class TwinsController {
  @SlidingLimit({ name: 'twin-enforced', limit: 2, windowMs: 60_000, key: 'header:x-api-key' })
  @Get('enforced')
  enforced(): string {
    return 'enforced';
  }

  @SlidingLimit({ name: 'twin-shadow', limit: 2, windowMs: 60_000, mode: 'shadow', key: 'header:x-api-key' })
  @Get('shadow')
  shadow(): string {
    return 'shadow';
  }

  /** 3 per minute enforced, beside a candidate (`reports.candidate`) of 1 per minute. */
  @SlidingLimit({ name: 'reports', limit: 3, windowMs: 60_000, key: 'header:x-api-key', candidate: { limit: 1 } })
  @Get('reports')
  reports(): string {
    return 'reports';
  }
}

const PROM_DECISIONS = 'sliding_limit_limit_decisions_total';

/** A Prometheus sample's name with its labels, in the order prom-client writes them. */
function series(name: string, labels: Record<string, string>): string {
  return `${name}{${Object.entries(labels)
    .map(([label, value]) => `${label}="${value}"`)
    .join(',')}}`;
}

describe.each(PLATFORMS)('metrics by limit through the guard on %s', (platform) => {
  let app: TestApp | undefined;
  let otel: OtelHarness;
  let registry: Registry;
  beforeEach(() => {
    otel = startOtel();
    registry = new Registry();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await otel.shutdown();
  });

  const start = async () => {
    app = await startTestApp({
      platform,
      controllers: [TwinsController],
      // Both exports at once: they share one tally of the limiter's decisions.
      imports: [
        RateLimitPrometheusModule.forRoot({ registry }),
        RateLimitOpenTelemetryModule.forRoot({ meterProvider: otel.meterProvider, spans: false }),
      ],
      // Generous: a busy machine can keep the shared Redis from answering within the default 250 ms.
      options: { timeoutMs: 5000 },
    });
    return app;
  };
  const send = async (path: string, apiKey: string, times: number): Promise<number[]> => {
    const statuses: number[] = [];
    for (let i = 0; i < times; i++) statuses.push((await app!.http().get(path).set('x-api-key', apiKey)).status);
    return statuses;
  };

  it('counts refusals per enforced limit, and a shadow limit would-refuse exactly what its enforced twin refused', async () => {
    await start();
    expect(await send('/twins/enforced', 'k1', 5)).toEqual([200, 200, 429, 429, 429]);
    expect(await send('/twins/shadow', 'k1', 5)).toEqual([200, 200, 200, 200, 200]);
    expect(await send('/twins/reports', 'k1', 5)).toEqual([200, 200, 200, 429, 429]);

    const prom = samples(await registry.metrics());
    const promCount = (limit: string, mode: string, outcome: string) =>
      prom.get(series(PROM_DECISIONS, { limit, mode, outcome }));
    expect(promCount('twin-enforced', 'enforced', 'allowed')).toBe(2);
    expect(promCount('twin-enforced', 'enforced', 'rejected')).toBe(3);
    expect(promCount('twin-shadow', 'shadow', 'allowed')).toBe(2);
    expect(promCount('twin-shadow', 'shadow', 'would_reject')).toBe(3);
    expect(promCount('twin-shadow', 'shadow', 'rejected')).toBe(0);
    expect(promCount('twin-shadow', 'shadow', 'would_reject')).toBe(promCount('twin-enforced', 'enforced', 'rejected'));
    // The candidate (1 per minute): room for the 1st; full while the 2nd and 3rd were admitted (the
    // refusals enforcing it would add); full when `reports` refused the 4th and 5th. An enforced twin
    // would have refused 4: would_reject + rejected.
    expect(promCount('reports', 'enforced', 'rejected')).toBe(2);
    expect(promCount('reports.candidate', 'shadow', 'allowed')).toBe(1);
    expect(promCount('reports.candidate', 'shadow', 'would_reject')).toBe(2);
    expect(promCount('reports.candidate', 'shadow', 'rejected')).toBe(2);
    // An enforced limit is never `would_reject`.
    expect(promCount('twin-enforced', 'enforced', 'would_reject')).toBeUndefined();

    const metrics = await otel.collect();
    const otelCount = (limit: string, mode: string, outcome: string) =>
      valueOf(metrics, 'rate_limit.limit.decisions', {
        'rate_limit.limit.name': limit,
        'rate_limit.limit.mode': mode,
        'rate_limit.outcome': outcome,
      });
    expect(otelCount('twin-enforced', 'enforced', 'rejected')).toBe(3);
    expect(otelCount('twin-shadow', 'shadow', 'would_reject')).toBe(3);
    expect(otelCount('reports.candidate', 'shadow', 'would_reject')).toBe(2);
    expect(otelCount('reports.candidate', 'shadow', 'rejected')).toBe(2);
    expect(otelCount('twin-enforced', 'enforced', 'would_reject')).toBeUndefined();
  });

  it('counts the decisions a per-key override applied to, by limit and override, never by key', async () => {
    await start();
    const redis = connectShared();
    try {
      const overrides = new RedisOverridesStore(redis, { keyPrefix: app!.keyPrefix });
      await overrides.set(
        'twin-enforced:{header.x-api-key:vip-4711}',
        { action: 'limit', limit: 5 },
        { ttlMs: 60_000 },
      );
      await overrides.set('twin-enforced:{header.x-api-key:ops-0815}', { action: 'exempt' }, { ttlMs: 60_000 });
      await overrides.set('twin-shadow:{header.x-api-key:bot-666}', { action: 'block' }, { ttlMs: 60_000 });
    } finally {
      await redis.quit();
    }
    expect(await send('/twins/enforced', 'vip-4711', 6)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(await send('/twins/enforced', 'ops-0815', 3)).toEqual([200, 200, 200]);
    expect(await send('/twins/enforced', 'nobody', 1)).toEqual([200]);
    // A blocked key on a shadow limit: refused by nothing, would-refused each time.
    expect(await send('/twins/shadow', 'bot-666', 2)).toEqual([200, 200]);

    const text = await registry.metrics();
    const prom = samples(text);
    const applied = (limit: string, mode: string, override: string) =>
      prom.get(series('sliding_limit_limit_overrides_total', { limit, mode, override }));
    expect(applied('twin-enforced', 'enforced', 'limit')).toBe(6);
    expect(applied('twin-enforced', 'enforced', 'exempt')).toBe(3);
    expect(applied('twin-shadow', 'shadow', 'block')).toBe(2);
    expect(prom.get(series(PROM_DECISIONS, { limit: 'twin-shadow', mode: 'shadow', outcome: 'would_reject' }))).toBe(2);
    expect(text).not.toMatch(/vip-4711|ops-0815|bot-666|nobody/);

    const metrics = await otel.collect();
    expect(
      valueOf(metrics, 'rate_limit.limit.overrides', {
        'rate_limit.limit.name': 'twin-enforced',
        'rate_limit.limit.mode': 'enforced',
        'rate_limit.override': 'exempt',
      }),
    ).toBe(3);
    expect(JSON.stringify(metrics)).not.toMatch(/vip-4711|ops-0815|bot-666|nobody/);
  });
});

describe('metrics by limit while Redis is down', () => {
  let app: TestApp | undefined;
  let otel: OtelHarness | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await otel?.shutdown();
    otel = undefined;
  });
  // After the app's afterEach: the module closes only what it opened, not this client.
  const redis = useRestartableRedis();

  it('counts degraded decisions per limit and mode, by kind, and no Redis decision for them', async () => {
    const registry = new Registry();
    otel = startOtel();
    const keyPrefix = uniquePrefix('limit-degraded');
    app = await startTestApp({
      platform: 'express',
      controllers: [TwinsController],
      imports: [
        RateLimitPrometheusModule.forRoot({ registry }),
        RateLimitOpenTelemetryModule.forRoot({ meterProvider: otel.meterProvider, spans: false }),
      ],
      rateLimitModule: RateLimitModule.forRoot({
        ...TEST_LIMITER_SETTINGS,
        client: redis.client(),
        keyPrefix,
        onRedisError: 'allow',
      }),
      options: { keyPrefix },
    });
    await app.http().get('/twins/reports').set('x-api-key', 'k').expect(200);
    await redis.stop();
    for (let i = 0; i < 3; i++) await app.http().get('/twins/reports').set('x-api-key', 'k').expect(200);

    const prom = samples(await registry.metrics());
    const degraded = (limit: string, mode: string) =>
      prom.get(series('sliding_limit_limit_degraded_decisions_total', { limit, mode, kind: 'allow' }));
    expect(degraded('reports', 'enforced')).toBe(3);
    expect(degraded('reports.candidate', 'shadow')).toBe(3);
    // Only the decision Redis made counts as one.
    expect(prom.get(series(PROM_DECISIONS, { limit: 'reports', mode: 'enforced', outcome: 'allowed' }))).toBe(1);
    expect(prom.get(series(PROM_DECISIONS, { limit: 'reports.candidate', mode: 'shadow', outcome: 'allowed' }))).toBe(
      1,
    );

    const metrics = await otel.collect();
    const otelDegraded = (limit: string, mode: string) =>
      valueOf(metrics, 'rate_limit.limit.degraded_decisions', {
        'rate_limit.limit.name': limit,
        'rate_limit.limit.mode': mode,
        'rate_limit.degraded': 'allow',
      });
    expect(otelDegraded('reports', 'enforced')).toBe(3);
    expect(otelDegraded('reports.candidate', 'shadow')).toBe(3);
  });
});
