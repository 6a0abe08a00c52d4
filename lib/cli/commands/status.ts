import type { LimiterErrorKind } from '../../core/call-metrics';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { formatAge, formatRate, formatTable, plural, rateOf } from '../format';
import { FoundReport, readInstanceReports } from '../instance-reports';
import { functionEntries, type NamedFunction } from '../libraries';
import { DEFAULT_REPORT_INTERVAL_MS, REPORT_TTL_INTERVALS } from '../../core/instance-report';

/** What the live instances do with one function name, summed over their reports. */
interface FunctionStatus extends NamedFunction {
  stable: string[];
  canary: { instanceId: string; percent: number }[];
  calls: number;
  allowed: number;
  /** Rejections answered by an instance's local block cache (included in `rejected`). */
  blockedLocally: number;
  rejected: number;
  errors: Partial<Record<LimiterErrorKind, number>>;
  errorCount: number;
  /** Decisions made without Redis after a failed call, by kind (allow, deny, insurance). */
  fallbacks: Record<string, number>;
  rejectionRate: number | null;
  errorRate: number | null;
  /** The highest p99 and max latency reported by an instance, ms. */
  latencyMs: { p99: number; max: number };
}

/** `functions status`: which function versions live instances call, their counters summed from their reports. */
export const statusCommand: Command = async ({ options, masters }) => {
  const { reports, unreadable } = await readInstanceReports(masters, options.prefix);
  const functions = summarize(reports);
  const scope = options.prefix === undefined ? 'under every key prefix' : `under key prefix "${options.prefix}"`;

  let text: string;
  if (reports.length === 0) {
    text =
      `No live instance reports ${scope}.\n` +
      `Limiters report every ${DEFAULT_REPORT_INTERVAL_MS / 1000} s unless their report option says otherwise; ` +
      `a report expires after ${REPORT_TTL_INTERVALS} intervals.\n`;
  } else {
    text = `${plural(reports.length, 'live instance')} ${scope}.\n\n`;
    text += formatTable([
      ['function', 'version', 'stable', 'canary', 'calls', 'rejection rate', 'error rate', 'p99 ms'],
      ...functions.map((f) => [
        f.functionName,
        f.version ?? '-',
        String(f.stable.length),
        f.canary.length === 0
          ? '0'
          : `${f.canary.length} (${[...new Set(f.canary.map((c) => `${c.percent}%`))].join(', ')})`,
        String(f.calls),
        formatRate(f.rejectionRate),
        formatRate(f.errorRate),
        f.latencyMs.p99.toFixed(2),
      ]),
    ]);
    text += '\n';
    text += formatTable([
      ['instance', 'prefix', 'host', 'pid', 'reported', 'function', 'canary'],
      ...reports.map(({ prefix, report }) => [
        report.instanceId,
        prefix,
        report.host,
        String(report.pid),
        formatAge(report.reportedAt),
        report.functionName,
        report.canary ? `${report.canary.functionName} ${report.canary.percent}%` : '-',
      ]),
    ]);
  }
  if (unreadable.length > 0)
    text += `\nIgnored ${plural(unreadable.length, 'key')} that match the report pattern but hold no report: ${unreadable.map((u) => u.key).join(', ')}\n`;

  return {
    exitCode: ExitCode.Ok,
    json: {
      prefix: options.prefix ?? null,
      instances: reports.map(({ key, prefix, node, report }) => ({ key, prefix, node, ...report })),
      functions,
      unreadable,
    },
    text,
  };
};

/** Sums the reports per function name: every function an instance selects or has called. */
function summarize(reports: readonly FoundReport[]): FunctionStatus[] {
  const entries = functionEntries<FunctionStatus>((named) => ({
    ...named,
    stable: [],
    canary: [],
    calls: 0,
    allowed: 0,
    rejected: 0,
    blockedLocally: 0,
    errors: {},
    errorCount: 0,
    fallbacks: {},
    rejectionRate: null,
    errorRate: null,
    latencyMs: { p99: 0, max: 0 },
  }));
  for (const { report } of reports) {
    entries.of(report.functionName).stable.push(report.instanceId);
    if (report.canary)
      entries
        .of(report.canary.functionName)
        .canary.push({ instanceId: report.instanceId, percent: report.canary.percent });
    for (const m of report.functions) {
      const status = entries.of(m.functionName);
      status.calls += m.calls;
      status.allowed += m.allowed;
      status.rejected += m.rejected;
      status.blockedLocally += m.blockedLocally ?? 0;
      for (const [kind, count] of Object.entries(m.errors) as [LimiterErrorKind, number][]) {
        status.errors[kind] = (status.errors[kind] ?? 0) + count;
        status.errorCount += count;
      }
      for (const [kind, count] of Object.entries(m.fallbacks ?? {}))
        status.fallbacks[kind] = (status.fallbacks[kind] ?? 0) + count;
      status.latencyMs.p99 = Math.max(status.latencyMs.p99, m.latencyMs.p99);
      status.latencyMs.max = Math.max(status.latencyMs.max, m.latencyMs.max);
    }
  }
  const statuses = entries.sorted();
  for (const status of statuses) {
    status.rejectionRate = rateOf(status.rejected, status.allowed + status.rejected);
    status.errorRate = rateOf(status.errorCount, status.calls);
  }
  return statuses;
}
