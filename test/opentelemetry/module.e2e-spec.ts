import { Controller, Get, type INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimitConfigError, RateLimitModule, SlidingLimit } from 'nestjs-sliding-limit';
import { RateLimitOpenTelemetryModule, type LimiterInstrumentationOptions } from 'nestjs-sliding-limit/opentelemetry';
import { TEST_LIMITER_SETTINGS } from '../support/test-limiter';
import { sharedRedisUrl, uniquePrefix } from '../support/test-redis';
import { startOtel, valueOf, type OtelHarness } from './otel-harness';

@Controller('quotes')
class QuoteController {
  @Get()
  @SlidingLimit({ name: 'quotes-burst', limit: 1, windowMs: 60_000 })
  @SlidingLimit({ name: 'quotes-daily', limit: 100, windowMs: 86_400_000 })
  quote() {
    return { quote: 'ok' };
  }
}

/** An Express app with the module and a span around every request, as an HTTP instrumentation makes. */
async function startApp(
  otel: OtelHarness,
  options: LimiterInstrumentationOptions,
  store: 'redis' | 'memory' = 'redis',
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RateLimitModule.forRoot(
        store === 'memory'
          ? { store: 'memory' }
          : {
              ...TEST_LIMITER_SETTINGS,
              redis: sharedRedisUrl(),
              keyPrefix: uniquePrefix('otel-nest'),
              functionName: 'sliding_allow_v2', // the function the attributes name
            },
      ),
      RateLimitOpenTelemetryModule.forRoot(options),
    ],
    controllers: [QuoteController],
  }).compile();
  const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
  const tracer = otel.tracerProvider.getTracer('http');
  app.use((req: { method: string; url: string }, res: { on(event: string, f: () => void): void }, next: () => void) =>
    tracer.startActiveSpan(`${req.method} ${req.url}`, (span) => {
      res.on('finish', () => span.end());
      next();
    }),
  );
  await app.listen(0, '127.0.0.1');
  return app;
}

describe('RateLimitOpenTelemetryModule', () => {
  let otel: OtelHarness;
  let app: INestApplication | undefined;
  beforeEach(() => {
    otel = startOtel();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await otel.shutdown();
  });

  it('records the guard’s decisions on the request span and in the metrics, and stops on app.close()', async () => {
    const V2 = { 'rate_limit.function.name': 'sliding_allow_v2', 'rate_limit.function.version': 'v2' };
    for (let round = 0; round < 2; round++) {
      // A second application in the same process starts clean: the first one's instrumentation is gone.
      app = await startApp(otel, { meterProvider: otel.meterProvider });
      const server = app.getHttpServer();
      expect((await request(server).get('/quotes')).status).toBe(200);
      expect((await request(server).get('/quotes')).status).toBe(429);

      const spans = otel.spans().slice(-2);
      expect(spans[0].attributes).toMatchObject({
        'rate_limit.allowed': true,
        'rate_limit.limit_names': ['quotes-burst', 'quotes-daily'],
        'rate_limit.function.name': 'sliding_allow_v2',
        'rate_limit.function.version': 'v2',
        'rate_limit.remaining': 0,
      });
      expect(spans[1].attributes).toMatchObject({ 'rate_limit.allowed': false });
      expect(spans[1].events.map((e) => [e.name, e.attributes?.['rate_limit.rejected_limit_names']])).toEqual([
        ['rate_limit.rejected', ['quotes-burst']],
      ]);
      // The key (the client's address) is on no span.
      expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('127.0.0.1');

      const metrics = await otel.collect();
      expect(valueOf(metrics, 'rate_limit.decisions', { ...V2, 'rate_limit.outcome': 'allowed' })).toBe(1);
      expect(valueOf(metrics, 'rate_limit.decisions', { ...V2, 'rate_limit.outcome': 'rejected' })).toBe(1);
      // Only this application's decisions: the first one's instrumentation left on app.close().
      await app.close();
      app = undefined;
    }
    expect(otel.spans()).toHaveLength(4);
  });

  it('fails at bootstrap on bad options, naming them', async () => {
    await expect(startApp(otel, { spans: 'yes', meterProvider: 42 } as never, 'memory')).rejects.toThrow(
      RateLimitConfigError,
    );
    await expect(startApp(otel, { spans: 'yes' } as never, 'memory')).rejects.toThrow(
      /RateLimitOpenTelemetryModule.*spans must be true, false or \{ rejectionEvent: boolean \}, got "yes"/s,
    );
  });
});
