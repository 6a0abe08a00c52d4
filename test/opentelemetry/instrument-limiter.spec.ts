import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { RateLimitConfigError, SlidingWindowLimiter } from 'nestjs-sliding-limit';
import { instrumentLimiter, OTEL_METER_NAME, type LimiterInstrumentation } from 'nestjs-sliding-limit/opentelemetry';
import { freePort } from '../support/free-port';
import { testLimiter } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';
import { pointsOf, startOtel, valueOf, type OtelHarness } from './otel-harness';

const V2 = { 'rate_limit.function.name': 'sliding_allow_v2', 'rate_limit.function.version': 'v2' };

describe('instrumentLimiter (OpenTelemetry)', () => {
  const redis = useSharedClient();
  let otel: OtelHarness;
  let limiter: SlidingWindowLimiter;
  let instrumentation: LimiterInstrumentation | undefined;

  beforeEach(() => {
    otel = startOtel();
    limiter = testLimiter({
      client: redis,
      keyPrefix: uniquePrefix('otel'),
      functionName: 'sliding_allow_v2', // the function the attributes name
      // The block cache keeps refusals only while no override is read.
      keyOverrides: false,
    });
  });
  afterEach(async () => {
    instrumentation?.close();
    instrumentation = undefined;
    await limiter.close();
    await otel.shutdown();
  });

  it('exports the decisions, the block cache rejections and the call latency, per function and version', async () => {
    instrumentation = instrumentLimiter(limiter, { meterProvider: otel.meterProvider });
    const rule = { limit: 2, windowMs: 60_000 };
    const outcomes = [];
    for (let i = 0; i < 4; i++) outcomes.push((await limiter.consume('user:1', rule)).allowed);
    await limiter.consumeAll([
      { key: 'ip:1', limit: 5, windowMs: 1000 },
      { key: 'user:2', limit: 5, windowMs: 60_000 },
    ]);
    expect(outcomes).toEqual([true, true, false, false]);

    const metrics = await otel.collect();
    expect(valueOf(metrics, 'rate_limit.calls', V2)).toBe(4); // the 4th was answered by the block cache
    expect(valueOf(metrics, 'rate_limit.decisions', { ...V2, 'rate_limit.outcome': 'allowed' })).toBe(3);
    expect(valueOf(metrics, 'rate_limit.decisions', { ...V2, 'rate_limit.outcome': 'rejected' })).toBe(2);
    expect(valueOf(metrics, 'rate_limit.blocked_locally', V2)).toBe(1);
    expect(pointsOf(metrics, 'rate_limit.errors')).toEqual([]);
    expect(pointsOf(metrics, 'rate_limit.degraded_decisions')).toEqual([]);
    // The same as the limiter's own counters.
    const [snapshot] = limiter.metrics.snapshot();
    expect(snapshot).toMatchObject({ calls: 4, allowed: 3, rejected: 2, blockedLocally: 1 });

    const duration = metrics.find((m) => m.descriptor.name === 'rate_limit.call.duration')!;
    expect(duration.descriptor.unit).toBe('s');
    expect(valueOf(metrics, 'rate_limit.call.duration', V2)).toBe(4);
    const histogram = duration.dataPoints[0].value as { sum: number; buckets: { boundaries: number[] } };
    expect(histogram.sum).toBeCloseTo(limiter.metrics.histogramOf('sliding_allow_v2')!.sum / 1000, 6);
    expect(histogram.buckets.boundaries[0]).toBe(0.00001);
    expect(histogram.buckets.boundaries).toHaveLength(23);

    // Collection time, not instrumentation time: a new decision shows in the next collection.
    await limiter.consume('user:3', rule);
    expect(valueOf(await otel.collect(), 'rate_limit.calls', V2)).toBe(5);
  });

  it('names its meter after the package, with the package version', async () => {
    instrumentation = instrumentLimiter(limiter, { meterProvider: otel.meterProvider });
    await limiter.consume('k', { limit: 1, windowMs: 1000 });
    otel.meterProvider.getMeter('probe'); // another scope, to be sure the scope is told apart
    const { version } = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    const scopes = (await otel.collectScopes()).map(({ scope }) => ({ name: scope.name, version: scope.version }));
    expect(scopes).toContainEqual({ name: OTEL_METER_NAME, version });
  });

  it('counts degraded decisions and errors by kind when Redis is unreachable', async () => {
    const port = await freePort(); // nothing listens there
    const dead = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
    dead.on('error', () => undefined);
    const deadLimiter = new SlidingWindowLimiter({
      client: dead,
      functionName: 'sliding_allow_v2',
      report: false,
      timeoutMs: 50,
      onRedisError: 'allow',
      logger: { log: () => undefined, warn: () => undefined },
    });
    const deadInstrumentation = instrumentLimiter(deadLimiter, { meterProvider: otel.meterProvider });
    try {
      const decisions = [];
      for (let i = 0; i < 3; i++) decisions.push(await deadLimiter.consume('k', { limit: 1, windowMs: 1000 }));
      await otel.tracerProvider.getTracer('test').startActiveSpan('denied', async (span) => {
        decisions.push(await deadLimiter.consume('k', { limit: 1, windowMs: 1000 }, { onRedisError: 'deny' }));
        span.end();
      });
      expect(decisions.map((d) => d.degraded)).toEqual(['allow', 'allow', 'allow', 'deny']);
      expect(otel.spans()[0].attributes).toMatchObject({
        'rate_limit.allowed': false,
        'rate_limit.degraded': 'deny',
        'error.type': 'connection',
      });

      const metrics = await otel.collect();
      expect(valueOf(metrics, 'rate_limit.degraded_decisions', { ...V2, 'rate_limit.degraded': 'allow' })).toBe(3);
      expect(valueOf(metrics, 'rate_limit.degraded_decisions', { ...V2, 'rate_limit.degraded': 'deny' })).toBe(1);
      const errors = pointsOf(metrics, 'rate_limit.errors');
      expect(errors.reduce((sum, [, value]) => sum + (value as number), 0)).toBe(4);
      const [snapshot] = deadLimiter.metrics.snapshot();
      for (const [kind, count] of Object.entries(snapshot.errors))
        expect(valueOf(metrics, 'rate_limit.errors', { ...V2, 'error.type': kind })).toBe(count);
      // The failed calls' latency is recorded for the decisions they led to.
      expect(valueOf(metrics, 'rate_limit.call.duration', V2)).toBe(4);
    } finally {
      deadInstrumentation.close();
      await deadLimiter.close();
      // A client whose connection was refused has ended already; disconnect() would start ioredis'
      // 2-second close timer on the dead socket and keep the worker alive.
      if (dead.status !== 'end') dead.disconnect();
    }
  });

  it('records the decision on the active span, without keys, and an event on a rejection', async () => {
    instrumentation = instrumentLimiter(limiter, { meterProvider: otel.meterProvider });
    const tracer = otel.tracerProvider.getTracer('test');
    // A minute: the second call finds the first in the window, however late a loaded host makes it.
    const rules = [
      { key: 'ip:10.1.2.3', limit: 1, windowMs: 60_000 },
      { key: 'user:alice', limit: 5, windowMs: 60_000 },
    ];
    const options = { limitNames: ['burst', 'hourly'], cost: 1 };
    for (const name of ['first', 'second']) {
      await tracer.startActiveSpan(name, async (span) => {
        await limiter.consumeAll(rules, options);
        span.end();
      });
    }
    // Outside any span: nothing to record on, nothing fails.
    await limiter.consumeAll(rules, options);

    const [first, second] = otel.spans();
    expect(first.attributes).toEqual({
      'rate_limit.allowed': true,
      'rate_limit.function.name': 'sliding_allow_v2',
      'rate_limit.function.version': 'v2',
      'rate_limit.cost': 1,
      'rate_limit.remaining': 0,
      'rate_limit.retry_after_ms': 0,
      'rate_limit.limit_names': ['burst', 'hourly'],
    });
    expect(first.events).toEqual([]);
    expect(second.attributes).toMatchObject({
      'rate_limit.allowed': false,
      'rate_limit.limit_names': ['burst', 'hourly'],
      'rate_limit.remaining': 0,
    });
    expect(second.attributes['rate_limit.retry_after_ms']).toBeGreaterThan(0);
    expect(second.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'rate_limit.rejected',
        {
          'rate_limit.retry_after_ms': second.attributes['rate_limit.retry_after_ms'],
          'rate_limit.rejected_limit_names': ['burst'],
        },
      ],
    ]);
    expect(JSON.stringify(otel.spans().map((s) => [s.attributes, s.events]))).not.toMatch(/10\.1\.2\.3|alice/);
  });

  it('marks locally blocked decisions on the span; spans: false and rejectionEvent: false hold back', async () => {
    instrumentation = instrumentLimiter(limiter, { metrics: false, spans: { rejectionEvent: false } });
    const tracer = otel.tracerProvider.getTracer('test');
    const rule = { limit: 1, windowMs: 60_000 };
    for (let i = 0; i < 3; i++) {
      await tracer.startActiveSpan(`call-${i}`, async (span) => {
        await limiter.consume('k', rule);
        span.end();
      });
    }
    const spans = otel.spans();
    expect(spans[1].attributes['rate_limit.blocked_locally']).toBeUndefined(); // rejected by Redis
    expect(spans[2].attributes).toMatchObject({ 'rate_limit.allowed': false, 'rate_limit.blocked_locally': true });
    expect(spans.flatMap((s) => s.events)).toEqual([]);
    expect(spans[0].attributes['rate_limit.limit_names']).toBeUndefined(); // none given
    expect(pointsOf(await otel.collect(), 'rate_limit.calls')).toEqual([]); // metrics: false

    instrumentation.close();
    instrumentation = instrumentLimiter(limiter, { meterProvider: otel.meterProvider, spans: false });
    await tracer.startActiveSpan('quiet', async (span) => {
      await limiter.consume('k', rule);
      span.end();
    });
    expect(otel.spans()[3].attributes).toEqual({});
  });

  it('records nothing after close()', async () => {
    instrumentation = instrumentLimiter(limiter, { meterProvider: otel.meterProvider });
    const tracer = otel.tracerProvider.getTracer('test');
    await limiter.consume('k', { limit: 10, windowMs: 60_000 });
    const before = await otel.collect();
    expect(valueOf(before, 'rate_limit.calls', V2)).toBe(1);

    instrumentation.close();
    instrumentation.close(); // idempotent
    await tracer.startActiveSpan('after', async (span) => {
      await limiter.consume('k', { limit: 10, windowMs: 60_000 });
      span.end();
    });
    const after = await otel.collect();
    expect(otel.spans()[0].attributes).toEqual({});
    // Cumulative series keep their last value; neither the counters nor the histogram move again.
    expect(valueOf(after, 'rate_limit.call.duration', V2)).toBe(1);
    expect(valueOf(after, 'rate_limit.calls', V2)).toBe(1);
    expect(limiter.metrics.snapshot()[0].calls).toBe(2);
  });

  it('rejects bad arguments, naming each', () => {
    expect.assertions(2);
    try {
      instrumentLimiter(
        {} as SlidingWindowLimiter,
        {
          meterProvider: {} as never,
          metrics: 'yes' as never,
          spans: { events: true } as never,
          tracer: 1,
        } as never,
      );
    } catch (error) {
      expect(error).toBeInstanceOf(RateLimitConfigError);
      expect((error as RateLimitConfigError).problems).toEqual([
        expect.stringMatching(/^limiter must be a SlidingWindowLimiter/),
        expect.stringMatching(/^unknown option tracer/),
        expect.stringMatching(/^meterProvider must be an OpenTelemetry MeterProvider/),
        expect.stringMatching(/^metrics must be true or false/),
        expect.stringMatching(/^spans must be true, false or \{ rejectionEvent: boolean \}/),
      ]);
    }
  });
});
