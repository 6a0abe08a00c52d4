import { Registry } from 'prom-client';
import { type DecisionEvent } from '../../lib';
import {
  leaseLimitTally,
  LimitTally,
  MAX_LIMIT_NAMES,
  OTHER_LIMITS_LABEL,
  UNNAMED_LIMIT_LABEL,
} from '../../lib/metrics/limit-tally';
import { instrumentLimiter } from '../../lib/opentelemetry';
import { startOtel, valueOf } from '../opentelemetry/otel-harness';
import { samples } from '../support/prometheus-samples';
import { useTestLimiters } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';
import { registerPrometheusMetrics } from 'nestjs-sliding-limit/prometheus';

describe('the tally of decisions by limit', () => {
  const redis = useSharedClient();
  const newLimiter = useTestLimiters(() => ({ client: redis, keyPrefix: uniquePrefix('tally') }));

  it('counts named limits by name and a decision without names as _unnamed, never a key', async () => {
    const limiter = newLimiter();
    const lease = leaseLimitTally(limiter);
    try {
      await limiter.consume('user:secret-1', { limit: 1, windowMs: 60_000 });
      await limiter.consume('user:secret-1', { limit: 1, windowMs: 60_000 }); // refused by Redis
      await limiter.consume('user:secret-1', { limit: 1, windowMs: 60_000 }); // refused by the block cache
      await limiter.consumeAll(
        [
          { key: 'ip:10.1.2.3', limit: 5, windowMs: 1000 },
          { key: 'user:secret-2', limit: 1, windowMs: 60_000, mode: 'shadow' },
        ],
        { limitNames: ['burst', 'trial'] },
      );
      await limiter.consumeAll(
        [
          { key: 'ip:10.1.2.3', limit: 5, windowMs: 1000 },
          { key: 'user:secret-2', limit: 1, windowMs: 60_000, mode: 'shadow' },
        ],
        { limitNames: ['burst', 'trial'] },
      );
      const counts = lease.tally.snapshot();
      expect(counts).toEqual([
        {
          limit: UNNAMED_LIMIT_LABEL,
          mode: 'enforced',
          allowed: 1,
          rejected: 2,
          wouldReject: 0,
          degraded: {},
          overrides: {},
        },
        { limit: 'burst', mode: 'enforced', allowed: 2, rejected: 0, wouldReject: 0, degraded: {}, overrides: {} },
        { limit: 'trial', mode: 'shadow', allowed: 1, rejected: 0, wouldReject: 1, degraded: {}, overrides: {} },
      ]);
      expect(JSON.stringify(counts)).not.toMatch(/secret|10\.1\.2\.3/);
    } finally {
      lease.release();
      await limiter.close();
    }
  });

  it('is shared by the exports of one limiter, listens while one holds it, and starts from zero after the last', async () => {
    const limiter = newLimiter();
    const rule = { limit: 10, windowMs: 60_000 };
    const first = leaseLimitTally(limiter);
    const second = leaseLimitTally(limiter);
    expect(second.tally).toBe(first.tally);
    await limiter.consume('k', rule);
    first.release();
    first.release(); // twice is harmless: the second holder still counts
    await limiter.consume('k', rule);
    expect(second.tally.snapshot()[0].allowed).toBe(2);
    second.release();
    await limiter.consume('k', rule);
    expect(second.tally.snapshot()[0].allowed).toBe(2); // no longer listening

    const third = leaseLimitTally(limiter);
    expect(third.tally).not.toBe(first.tally);
    await limiter.consume('k', rule);
    expect(third.tally.snapshot()[0].allowed).toBe(1);
    third.release();
    await limiter.close();
  });

  it('exports _unnamed to Prometheus and releases the tally on unregister', async () => {
    const limiter = newLimiter();
    const registry = new Registry();
    let exported = registerPrometheusMetrics(limiter, { registry });
    const unnamed = `sliding_limit_limit_decisions_total{limit="${UNNAMED_LIMIT_LABEL}",mode="enforced",outcome="allowed"}`;
    try {
      await limiter.consume('k', { limit: 10, windowMs: 60_000 });
      await limiter.consume('k', { limit: 10, windowMs: 60_000 });
      expect(samples(await registry.metrics()).get(unnamed)).toBe(2);
      exported.unregister();
      exported = registerPrometheusMetrics(limiter, { registry });
      await limiter.consume('k', { limit: 10, windowMs: 60_000 });
      expect(samples(await registry.metrics()).get(unnamed)).toBe(1);
    } finally {
      exported.unregister();
      await limiter.close();
    }
  });

  it('is the one tally of both exports, which stops when the last of them stops', async () => {
    const limiter = newLimiter();
    const registry = new Registry();
    const otel = startOtel();
    const prometheus = registerPrometheusMetrics(limiter, { registry });
    const instrumentation = instrumentLimiter(limiter, { meterProvider: otel.meterProvider, spans: false });
    const series = 'sliding_limit_limit_decisions_total{limit="burst",mode="enforced",outcome="allowed"}';
    const otelCount = async () =>
      valueOf(await otel.collect(), 'rate_limit.limit.decisions', {
        'rate_limit.limit.name': 'burst',
        'rate_limit.limit.mode': 'enforced',
        'rate_limit.outcome': 'allowed',
      });
    const decide = () => limiter.consumeAll([{ key: 'k', limit: 100, windowMs: 60_000 }], { limitNames: ['burst'] });
    try {
      await decide();
      await decide();
      expect(samples(await registry.metrics()).get(series)).toBe(2);
      expect(await otelCount()).toBe(2);
      instrumentation.close();
      await decide();
      expect(samples(await registry.metrics()).get(series)).toBe(3);
      prometheus.unregister();
      // Nobody holds it now: the next lease starts a tally of its own, from zero.
      const lease = leaseLimitTally(limiter);
      expect(lease.tally.snapshot()).toEqual([]);
      lease.release();
    } finally {
      instrumentation.close();
      prometheus.unregister();
      await otel.shutdown();
      await limiter.close();
    }
  });

  const decision = { allowed: true, limit: 5, remaining: 4, retryAfterMs: 0, resetMs: 0, functionName: 'f' };
  /** An allowed decision of one limit named `name`. */
  const event = (name: string): DecisionEvent => ({
    functionName: 'sliding_allow_v2',
    allowed: true,
    rules: [{ limit: 5, windowMs: 1000 }],
    limits: [decision],
    cost: 1,
    retryAfterMs: 0,
    latencyMs: 0.1,
    degraded: undefined,
    degradedCause: undefined,
    blockedLocally: false,
    limitNames: [name],
  });

  it('counts the names past the cap together as _other and says so once, naming the fix', () => {
    const warnings: string[] = [];
    const tally = new LimitTally((line) => warnings.push(line));
    for (let i = 0; i < MAX_LIMIT_NAMES + 5; i++) tally.record(event(`route-${i}`));
    tally.record(event('route-0'));

    const counts = tally.snapshot();
    expect(counts).toHaveLength(MAX_LIMIT_NAMES + 1);
    expect(counts.find((c) => c.limit === 'route-0')?.allowed).toBe(2);
    expect(counts.find((c) => c.limit === OTHER_LIMITS_LABEL)?.allowed).toBe(5);
    expect(warnings).toEqual([
      `Limit metrics: more than ${MAX_LIMIT_NAMES} limit names (the latest "route-${MAX_LIMIT_NAMES}"); further names ` +
        `are counted as "${OTHER_LIMITS_LABEL}". Limit names should come from @SlidingLimit decorators, never from ` +
        'requests: pass fixed names to limitNames',
    ]);
  });

  it('sends the overflow warning through process.emitWarning as a RateLimitMetricsWarning by default', () => {
    // A spy that swallows it: the real one would print it on the test run's stderr.
    const emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const tally = new LimitTally();
      // Two names past the cap, and still one warning.
      for (let i = 0; i < MAX_LIMIT_NAMES + 2; i++) tally.record(event(`route-${i}`));
      expect(emitWarning.mock.calls).toEqual([
        [expect.stringMatching(/^Limit metrics: more than \d+ limit names/), 'RateLimitMetricsWarning'],
      ]);
    } finally {
      emitWarning.mockRestore();
    }
  });
});
