import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { OpenMetricsContentType, Registry, register as globalRegister } from 'prom-client';
import ts from 'typescript';
import { RateLimitConfigError, SlidingWindowLimiter } from '../../lib';
import { LATENCY_BUCKETS_MS } from '../../lib/core/latency-histogram';
import { registerPrometheusMetrics } from '../../lib/metrics/prometheus';
import { samples } from '../support/prometheus-samples';
import { testLimiter } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';

describe('Prometheus export', () => {
  const redis = useSharedClient();
  let limiter: SlidingWindowLimiter;
  let now = 1_735_660_800_000;
  let keysOnV1 = 0;

  beforeAll(async () => {
    // v1 for half the keys, v2 for the other half; a rewindable clock makes v2 refuse with CLOCKSKEW.
    limiter = testLimiter({
      client: redis,
      keyPrefix: uniquePrefix('prom'),
      functionName: 'sliding_allow_v1',
      canary: { functionName: 'sliding_allow_v2', percent: 50 },
      clock: () => now,
      maxClockSkewMs: 0,
    });
    // Started first: a decision made before start-up has finished is the failure policy's, on v1 only.
    await limiter.init();
    const keys = Array.from({ length: 100 }, (_, i) => `user:${i}`);
    for (let round = 0; round < 3; round++) {
      const decisions = await Promise.all(keys.map((key) => limiter.consume(key, { limit: 2, windowMs: 60_000 })));
      keysOnV1 = decisions.filter((d) => d.functionName === 'sliding_allow_v1').length;
    }
    now -= 5;
    await Promise.all(keys.map((key) => limiter.consume(key, { limit: 2, windowMs: 60_000 }).catch(() => undefined)));
    now += 10;
  });
  afterAll(() => limiter.close());

  it('exposes calls, decisions, errors and a latency histogram per function, read from limiter.metrics at scrape time', async () => {
    const registry = new Registry();
    const exported = registerPrometheusMetrics(limiter, { registry });
    expect(exported.names).toEqual([
      'sliding_limit_calls_total',
      'sliding_limit_decisions_total',
      'sliding_limit_errors_total',
      'sliding_limit_blocked_locally_total',
      'sliding_limit_degraded_decisions_total',
      'sliding_limit_degraded',
      'sliding_limit_limit_decisions_total',
      'sliding_limit_limit_degraded_decisions_total',
      'sliding_limit_limit_overrides_total',
      'sliding_limit_call_duration_seconds',
    ]);

    const text = await registry.metrics();
    expect(text).toContain('# TYPE sliding_limit_calls_total counter');
    expect(text).toContain('# TYPE sliding_limit_call_duration_seconds histogram');
    const values = samples(text);
    const snapshot = limiter.metrics.snapshot();
    expect(snapshot.map((m) => m.functionName).sort()).toEqual(['sliding_allow_v1', 'sliding_allow_v2']);
    let rejectedTotal = 0;
    for (const m of snapshot) {
      const fn = m.functionName;
      expect(values.get(`sliding_limit_calls_total{function="${fn}"}`)).toBe(m.calls);
      expect(values.get(`sliding_limit_decisions_total{function="${fn}",outcome="allowed"}`)).toBe(m.allowed);
      expect(values.get(`sliding_limit_decisions_total{function="${fn}",outcome="rejected"}`)).toBe(m.rejected);
      rejectedTotal += m.rejected;
      expect(values.get(`sliding_limit_blocked_locally_total{function="${fn}"}`)).toBe(m.blockedLocally ?? 0);
      expect(values.get(`sliding_limit_call_duration_seconds_count{function="${fn}"}`)).toBe(m.calls);
      expect(values.get(`sliding_limit_call_duration_seconds_bucket{le="+Inf",function="${fn}"}`)).toBe(m.calls);
      const histogram = limiter.metrics.histogramOf(fn)!;
      expect(values.get(`sliding_limit_call_duration_seconds_sum{function="${fn}"}`)).toBeCloseTo(
        histogram.sum / 1000,
        9,
      );

      // Every exported bucket holds exactly the calls at most that slow, and they never decrease.
      const buckets = [...values].filter(
        ([name]) =>
          name.startsWith('sliding_limit_call_duration_seconds_bucket{') &&
          name.endsWith(`function="${fn}"}`) &&
          !name.includes('+Inf'),
      );
      expect(buckets).toHaveLength(23);
      let previous = 0;
      for (const [name, count] of buckets) {
        const le = Number(/le="([^"]+)"/.exec(name)![1]) * 1000;
        const expected = histogram
          .bucketCounts()
          .reduce((sum, n, i) => (LATENCY_BUCKETS_MS[i] <= le * (1 + 1e-6) ? sum + n : sum), 0);
        expect(count).toBe(expected);
        expect(count).toBeGreaterThanOrEqual(previous);
        previous = count;
      }
    }
    // 100 keys × 3 rounds at a limit of 2: 100 rejected; in the rewound round v1 (no skew check)
    // rejected its keys again and v2 failed its keys with CLOCKSKEW.
    expect(keysOnV1).toBeGreaterThan(20);
    expect(keysOnV1).toBeLessThan(80);
    expect(rejectedTotal).toBe(100 + keysOnV1);
    const v2Keys = snapshot.find((m) => m.functionName === 'sliding_allow_v2')!;
    expect(v2Keys.errors.clock_skew).toBeGreaterThan(0);
    expect(values.get('sliding_limit_errors_total{function="sliding_allow_v2",kind="clock_skew"}')).toBe(
      v2Keys.errors.clock_skew,
    );
    expect(
      [...values.keys()].some((name) => name.startsWith('sliding_limit_errors_total{function="sliding_allow_v1"')),
    ).toBe(false);
    // Degraded decisions by kind; the clock-skew refusals failed open.
    for (const m of snapshot) {
      const metric = 'sliding_limit_degraded_decisions_total';
      const exported = [...values].filter(([name]) => name.startsWith(`${metric}{function="${m.functionName}"`));
      expect(Object.fromEntries(exported.map(([name, value]) => [/kind="([^"]+)"/.exec(name)![1], value]))).toEqual(
        m.fallbacks ?? {},
      );
    }
    expect(v2Keys.fallbacks?.allow).toBe(v2Keys.errors.clock_skew);
    // The gauge: those degraded decisions were made moments ago.
    expect(values.get('sliding_limit_degraded')).toBe(1);

    // Scrape time, not registration time: a new call shows in the next scrape.
    const decision = await limiter.consume('a-new-key', { limit: 1000, windowMs: 60_000 });
    const series = `sliding_limit_calls_total{function="${decision.functionName}"}`;
    expect(samples(await registry.metrics()).get(series)).toBe(values.get(series)! + 1);
    exported.unregister();
    expect((await registry.metrics()).trim()).toBe('');
  });

  it('takes a prefix, and leaves `_total` to an OpenMetrics registry', async () => {
    const registry = new Registry<OpenMetricsContentType>();
    registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const exported = registerPrometheusMetrics(limiter, { registry, prefix: 'edge_rl_' });
    expect(exported.names).toEqual([
      'edge_rl_calls',
      'edge_rl_decisions',
      'edge_rl_errors',
      'edge_rl_blocked_locally',
      'edge_rl_degraded_decisions',
      'edge_rl_degraded',
      'edge_rl_limit_decisions',
      'edge_rl_limit_degraded_decisions',
      'edge_rl_limit_overrides',
      'edge_rl_call_duration_seconds',
    ]);
    const text = await registry.metrics();
    expect(text).toMatch(/^edge_rl_calls_total\{function="sliding_allow_v1"\} \d+$/m);
    expect(text).not.toContain('_total_total');
    expect(text).toMatch(/^edge_rl_call_duration_seconds_count\{function="sliding_allow_v2"\} \d+$/m);
  });

  it("registers in prom-client's global registry by default, and refuses a second export under the same names without breaking the first", async () => {
    const exported = registerPrometheusMetrics(limiter);
    try {
      expect(await globalRegister.metrics()).toContain(
        'sliding_limit_decisions_total{function="sliding_allow_v1",outcome="allowed"}',
      );
      const other = testLimiter({ client: redis, keyPrefix: uniquePrefix('prom2') });
      expect(() => registerPrometheusMetrics(other)).toThrow(/already been registered/);
      const values = samples(await globalRegister.metrics());
      expect(values.get('sliding_limit_calls_total{function="sliding_allow_v1"}')).toBe(
        limiter.metrics.snapshot().find((m) => m.functionName === 'sliding_allow_v1')!.calls,
      );
    } finally {
      exported.unregister();
    }
    expect(await globalRegister.metrics()).not.toContain('sliding_limit_');
  });

  it('rejects a bad prefix and a non-limiter, naming both', () => {
    try {
      registerPrometheusMetrics({} as SlidingWindowLimiter, { registry: new Registry(), prefix: 'has-dash' });
    } catch (error) {
      expect(error).toBeInstanceOf(RateLimitConfigError);
      expect((error as RateLimitConfigError).problems).toEqual([
        expect.stringMatching(/^limiter must be/),
        expect.stringMatching(/^prefix must be/),
      ]);
    }
    expect.assertions(2);
  });

  it('says to run `npm i prom-client` when it is not installed', () => {
    // The module and what it imports, compiled into a folder with no node_modules above it.
    const root = mkdtempSync(join(tmpdir(), 'nsl-noprom-'));
    try {
      const lib = resolve(__dirname, '..', '..', 'lib');
      const pending = [join(lib, 'metrics', 'prometheus.ts')];
      const seen = new Set<string>();
      while (pending.length > 0) {
        const file = pending.pop()!;
        if (seen.has(file)) continue;
        seen.add(file);
        const source = readFileSync(file, 'utf8');
        for (const [, spec] of source.matchAll(/^import (?!type )[^;]*? from '(\.[^']+)';/gm))
          pending.push(resolve(dirname(file), `${spec}.ts`));
        const out = join(root, relative(lib, file)).replace(/\.ts$/, '.js');
        mkdirSync(dirname(out), { recursive: true });
        writeFileSync(
          out,
          ts.transpileModule(source, {
            compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
          }).outputText,
        );
      }
      const script = `
        const { registerPrometheusMetrics } = require(${JSON.stringify(join(root, 'metrics', 'prometheus.js'))});
        try { registerPrometheusMetrics({ metrics: { snapshot: () => [] } }); console.log('no error'); }
        catch (error) { console.log(error.name + ': ' + error.message); }`;
      const output = execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' });
      expect(output).toMatch(/^RateLimitConfigError: .*prom-client.*not installed; run: npm i prom-client/s);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
