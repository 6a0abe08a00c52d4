import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { RedisOverridesStore } from '../../lib/redis/overrides-store';
import { testLimiter } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';
import { registerPrometheusMetrics } from 'nestjs-sliding-limit/prometheus';

interface Target {
  refId: string;
  expr: string;
  datasource?: { type: string; uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  schemaVersion: number;
  uid: string;
  title: string;
  templating: { list: { name: string; type: string; query: unknown; definition?: string }[] };
  panels: Panel[];
}

const DASHBOARD = join(__dirname, '..', '..', 'docs', 'grafana', 'nestjs-sliding-limit.json');

/** PromQL's functions, aggregations and keywords: the identifiers of an expression that are not metrics. */
const PROMQL_WORDS = new Set([
  'sum',
  'max',
  'min',
  'avg',
  'count',
  'rate',
  'irate',
  'increase',
  'histogram_quantile',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
]);

/** The metric names an expression reads: its identifiers, less strings, label matchers, groupings and ranges. */
function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const identifiers = bare.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [];
  return identifiers.filter((word) => !PROMQL_WORDS.has(word));
}

/**
 * The labels of an expression's groupings and matchings (`by (…)`, `without (…)`, `on (…)`,
 * `ignoring (…)`): a typo there (`by (limt)`) gives no error in Prometheus, only a series without it.
 */
function groupingLabelsIn(expr: string): string[] {
  const bare = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...bare.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)].flatMap(([, labels]) =>
    labels
      .split(',')
      .map((label) => label.trim())
      .filter((label) => label !== ''),
  );
}

/** `metric{label="…",…}` selectors of an expression: the metric and the labels it matches on. */
function selectorsIn(expr: string): { metric: string; labels: string[] }[] {
  return [...expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}/g)].map(([, metric, matchers]) => ({
    metric,
    labels: [...matchers.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map(([, label]) => label),
  }));
}

/** Whether the brackets of an expression pair up (outside strings): what a typo in a query breaks first. */
function bracketsPairUp(expr: string): boolean {
  const open: string[] = [];
  const closing: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  for (const char of expr.replace(/"(?:[^"\\]|\\.)*"/g, '""')) {
    if ('([{'.includes(char)) open.push(char);
    else if (char in closing && open.pop() !== closing[char]) return false;
  }
  return open.length === 0;
}

function allPanels(panels: Panel[]): Panel[] {
  return panels.flatMap((panel) => [panel, ...allPanels(panel.panels ?? [])]);
}

describe('the Grafana dashboard (docs/grafana/nestjs-sliding-limit.json)', () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
  const panels = allPanels(dashboard.panels);
  const queries = panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel, target })));

  /** Exported series: the names and labels the Prometheus export writes after a few decisions. */
  let exported: Map<string, Set<string>>;
  const redis = useSharedClient();
  beforeAll(async () => {
    let now = 1_735_660_800_000;
    const keyPrefix = uniquePrefix('grafana');
    // The test timeout: the degraded decisions come from the clock, not from a busy machine.
    const limiter = testLimiter({
      client: redis,
      keyPrefix,
      clock: () => now,
      maxClockSkewMs: 0,
      onRedisError: 'allow',
      logger: { log: () => undefined, warn: () => undefined },
    });
    const registry = new Registry();
    const registration = registerPrometheusMetrics(limiter, { registry });
    try {
      // Decisions of every kind, so that every series the dashboard reads exists: enforced and shadow,
      // refused and would-refuse, an override, and degraded ones (a clock behind the keys' newest entry).
      await new RedisOverridesStore(redis, { keyPrefix }).set('vip', { action: 'exempt' }, { ttlMs: 60_000 });
      const rules = (key: string) => [
        { key: `${key}:a`, limit: 1, windowMs: 60_000 },
        { key: `${key}:b`, limit: 1, windowMs: 60_000, mode: 'shadow' as const },
      ];
      for (let i = 0; i < 3; i++) await limiter.consumeAll(rules('k'), { limitNames: ['enforced', 'trial'] });
      await limiter.consume('vip', { limit: 1, windowMs: 60_000 });
      now -= 5;
      await limiter.consumeAll(rules('k'), { limitNames: ['enforced', 'trial'] });
      exported = new Map();
      for (const metric of await registry.getMetricsAsJSON()) {
        const labels = new Set(metric.values.flatMap((value) => Object.keys(value.labels)));
        const names = String(metric.type) === 'histogram' ? ['_bucket', '_sum', '_count'] : [''];
        for (const suffix of names) exported.set(`${metric.name}${suffix}`, labels);
      }
    } finally {
      registration.unregister();
      await limiter.close();
    }
  });

  it('is a Grafana dashboard with a Prometheus data source variable that every panel uses', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.uid).toBe('nestjs-sliding-limit');
    const datasource = dashboard.templating.list.find((variable) => variable.name === 'datasource');
    expect(datasource).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const ids = panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    // No two panels cover the same cell of the grid.
    const cells = new Map<string, string>();
    for (const { title, gridPos } of panels) {
      for (let x = gridPos.x; x < gridPos.x + gridPos.w; x++)
        for (let y = gridPos.y; y < gridPos.y + gridPos.h; y++) {
          expect({ cell: `${x},${y}`, taken: cells.get(`${x},${y}`), title }).toEqual({
            cell: `${x},${y}`,
            taken: undefined,
            title,
          });
          cells.set(`${x},${y}`, title);
        }
    }
    for (const panel of panels) {
      expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
      if (panel.type === 'row') continue;
      expect({ title: panel.title, datasource: panel.datasource }).toEqual({
        title: panel.title,
        datasource: { type: 'prometheus', uid: '${datasource}' },
      });
      expect(panel.targets?.length).toBeGreaterThan(0);
    }
  });

  it('queries only metrics the package exports, by labels they carry', () => {
    expect(exported.size).toBeGreaterThan(10);
    expect(queries.length).toBeGreaterThan(10);
    for (const { target } of queries) {
      const { expr } = target;
      const names = metricNamesIn(expr);
      expect({ expr, reads: names.length > 0, bracketsPairUp: bracketsPairUp(expr) }).toEqual({
        expr,
        reads: true,
        bracketsPairUp: true,
      });
      for (const name of names)
        expect({ expr, name, exported: exported.has(name) }).toEqual({ expr, name, exported: true });
      // Every metric the expression reads carries the labels it groups by: the dashboard's
      // expressions group each side of a ratio alike.
      for (const name of names)
        for (const label of groupingLabelsIn(expr))
          expect({ expr, name, label, exported: exported.get(name)?.has(label) }).toEqual({
            expr,
            name,
            label,
            exported: true,
          });
      for (const { metric, labels } of selectorsIn(expr)) {
        for (const label of labels)
          expect({ expr, metric, label, exported: exported.get(metric)?.has(label) }).toEqual({
            expr,
            metric,
            label,
            exported: true,
          });
      }
    }
    // The variables' label_values(metric, label) too.
    const variables = dashboard.templating.list.filter((variable) => variable.definition !== undefined);
    expect(variables.length).toBeGreaterThan(0);
    for (const { definition } of variables) {
      const [, metric, label] = /^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*), *([a-zA-Z_]+)\)$/.exec(definition!) ?? [];
      expect({ definition, label: exported.get(metric)?.has(label) }).toEqual({ definition, label: true });
    }
  });

  it('shows the limits, shadow limits, degraded decisions, overrides, the canary by function and the latency', () => {
    const read = (metric: string) => queries.filter(({ target }) => metricNamesIn(target.expr).includes(metric));
    for (const metric of [
      'sliding_limit_limit_decisions_total',
      'sliding_limit_limit_degraded_decisions_total',
      'sliding_limit_limit_overrides_total',
      'sliding_limit_degraded',
      'sliding_limit_calls_total',
      'sliding_limit_call_duration_seconds_bucket',
    ])
      expect({ metric, shown: read(metric).length > 0 }).toEqual({ metric, shown: true });
    const exprs = queries.map(({ target }) => target.expr);
    expect(exprs.some((e) => e.includes('mode="shadow"') && e.includes('outcome="would_reject"'))).toBe(true);
    expect(exprs.some((e) => /sum by \(function\) \(rate\(sliding_limit_calls_total/.test(e))).toBe(true);
    for (const q of ['0.5', '0.9', '0.99'])
      expect(exprs).toContainEqual(
        expect.stringContaining(
          `histogram_quantile(${q}, sum by (le, function) (rate(sliding_limit_call_duration_seconds_bucket`,
        ),
      );
  });
});
