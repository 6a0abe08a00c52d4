import { Controller, Get, Header, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Registry, register } from 'prom-client';
import { RateLimitConfigError, RateLimitModule, SlidingLimit } from 'nestjs-sliding-limit';
import { PLATFORMS, useTestApps } from '../support/nest-app';
import { RateLimitPrometheusExport } from '../../lib/prometheus/rate-limit-prometheus.module';
import { RateLimitPrometheusModule } from 'nestjs-sliding-limit/prometheus';

/** The plain `/metrics` controller docs/metrics.md shows. */
@Controller('metrics')
class MetricsController {
  @Get()
  @Header('Content-Type', register.contentType)
  metrics(): Promise<string> {
    return register.metrics();
  }
}

@Controller('quotes')
class QuoteController {
  @Get()
  @SlidingLimit({ limit: 1, windowMs: 60_000 })
  quote() {
    return { quote: 'ok' };
  }
}

describe.each(PLATFORMS)('RateLimitPrometheusModule on %s', (platform) => {
  const startApp = useTestApps();

  it("registers on prom-client's global registry at init, serves /metrics, unregisters on close; a second app does it again", async () => {
    for (let round = 0; round < 2; round++) {
      const app = await startApp({
        platform,
        controllers: [MetricsController, QuoteController],
        imports: [RateLimitPrometheusModule.forRoot()],
        options: { functionName: 'sliding_allow_v2' }, // the function the metrics name
      });
      expect(app.app.get(RateLimitPrometheusExport).names).toContain('sliding_limit_decisions_total');
      await app.http().get('/quotes').expect(200);
      await app.http().get('/quotes').expect(429);
      const response = await app.http().get('/metrics').expect(200);
      expect(response.headers['content-type']).toMatch(/^text\/plain;.*version=0\.0\.4/);
      expect(response.text).toContain('sliding_limit_decisions_total{function="sliding_allow_v2",outcome="allowed"} 1');
      expect(response.text).toContain(
        'sliding_limit_decisions_total{function="sliding_allow_v2",outcome="rejected"} 1',
      );
      expect(response.text).toMatch(/^sliding_limit_call_duration_seconds_count\{function="sliding_allow_v2"\} 2$/m);

      await app.close();
      expect(await register.metrics()).not.toContain('sliding_limit_');
    }
  });
});

describe('RateLimitPrometheusModule options', () => {
  const startApp = useTestApps();

  it('takes a registry and a prefix, also from forRootAsync', async () => {
    const registry = new Registry();
    @Module({ providers: [{ provide: Registry, useValue: registry }], exports: [Registry] })
    class MetricsModule {}

    const app = await startApp({
      platform: 'express',
      controllers: [QuoteController],
      imports: [
        RateLimitPrometheusModule.forRootAsync({
          imports: [MetricsModule],
          inject: [Registry],
          useFactory: (given: Registry) => ({ registry: given, prefix: 'edge_rl_' }),
        }),
      ],
      options: { functionName: 'sliding_allow_v2' },
    });
    await app.http().get('/quotes').expect(200);
    const text = await registry.metrics();
    expect(text).toContain('edge_rl_calls_total{function="sliding_allow_v2"} 1');
    expect(await register.metrics()).not.toContain('edge_rl_');
    await app.close();
    expect((await registry.metrics()).trim()).toBe('');
  });

  it('fails at bootstrap on bad options, naming each', async () => {
    const compile = () =>
      Test.createTestingModule({
        imports: [
          RateLimitModule.forRoot({ store: 'memory' }),
          RateLimitPrometheusModule.forRoot({ registry: {}, prefix: 'has-dash', port: 9464 } as never),
        ],
      }).compile();
    await expect(compile()).rejects.toThrow(RateLimitConfigError);
    await expect(compile()).rejects.toThrow(
      /RateLimitPrometheusModule.*unknown option port.*registry must be a prom-client Registry.*prefix must be a Prometheus metric name prefix/s,
    );
  });

  it('fails app.init() when the names are taken in the registry, saying so', async () => {
    const registry = new Registry();
    const taken = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ store: 'memory' }), RateLimitPrometheusModule.forRoot({ registry })],
    }).compile();
    const first = taken.createNestApplication({ logger: false });
    await first.init();
    const second = (
      await Test.createTestingModule({
        imports: [RateLimitModule.forRoot({ store: 'memory' }), RateLimitPrometheusModule.forRoot({ registry })],
      }).compile()
    ).createNestApplication({ logger: false });
    try {
      await expect(second.init()).rejects.toThrow(/already been registered/);
    } finally {
      await second.close();
      await first.close();
    }
    expect((await registry.metrics()).trim()).toBe('');
  });
});
