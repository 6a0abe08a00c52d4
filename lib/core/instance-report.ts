import type { CanarySplit } from './function-selection';
import { isLimiterErrorKind, type FunctionCallMetrics, type LimiterErrorKind } from './call-metrics';
import type { LatencySummary } from './latency-histogram';
import { escapeGlob } from './override-keys';

/** What a running limiter records in Redis about itself, for `functions status` and `functions delete`. */
export interface InstanceReport {
  /** Identifies the process; part of the key. */
  instanceId: string;
  /** `os.hostname()` of the process. */
  host: string;
  pid: number;
  /** When the reporter started, ISO 8601. */
  startedAt: string;
  /** When this report was written, ISO 8601. */
  reportedAt: string;
  /** How often the instance reports; the key expires after three intervals without a report. */
  intervalMs: number;
  /** The stable function the limiter calls. */
  functionName: string;
  canary: CanarySplit | null;
  /** Counters per function name since the process started. */
  functions: FunctionCallMetrics[];
}

/** The part of a report key between the limiter's key prefix and the instance id. */
export const INSTANCE_REPORT_KEY_PART = '__nsl:instance:';

/** The key an instance writes its report to: `<keyPrefix>__nsl:instance:<instanceId>`. */
export function instanceReportKey(prefix: string, instanceId: string): string {
  return `${prefix}${INSTANCE_REPORT_KEY_PART}${instanceId}`;
}

/** The SCAN MATCH pattern of the reports under a key prefix (taken literally), or under every prefix. */
export function INSTANCE_REPORT_MATCH(prefix?: string): string {
  return `${prefix === undefined ? '*' : escapeGlob(prefix)}${INSTANCE_REPORT_KEY_PART}*`;
}

/** The key prefix of a report key, given the report's instance id; undefined if the key is not its key. */
export function prefixOfReportKey(key: string, instanceId: string): string | undefined {
  const suffix = INSTANCE_REPORT_KEY_PART + instanceId;
  return key.endsWith(suffix) ? key.slice(0, key.length - suffix.length) : undefined;
}

/** Parses a report as stored in Redis; anything else (another key, a truncated value) is undefined. */
export function parseInstanceReport(text: unknown): InstanceReport | undefined {
  if (Buffer.isBuffer(text)) text = text.toString('utf8');
  if (typeof text !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(value)) return undefined;
  const { instanceId, host, pid, startedAt, reportedAt, intervalMs, functionName, canary, functions } = value;
  if (!isNonEmptyString(instanceId) || typeof host !== 'string' || !isCount(pid)) return undefined;
  if (!isTimestamp(startedAt) || !isTimestamp(reportedAt)) return undefined;
  if (!isCount(intervalMs) || intervalMs === 0 || !isNonEmptyString(functionName)) return undefined;
  const parsedCanary = canary === null || canary === undefined ? null : parseCanary(canary);
  if (parsedCanary === undefined || !Array.isArray(functions)) return undefined;
  const parsedFunctions: FunctionCallMetrics[] = [];
  for (const entry of functions) {
    const metrics = parseFunctionMetrics(entry);
    if (!metrics) return undefined;
    parsedFunctions.push(metrics);
  }
  return {
    instanceId,
    host,
    pid,
    startedAt,
    reportedAt,
    intervalMs,
    functionName,
    canary: parsedCanary,
    functions: parsedFunctions,
  };
}

function parseCanary(value: unknown): CanarySplit | undefined {
  if (!isObject(value) || !isNonEmptyString(value.functionName)) return undefined;
  const { functionName, percent } = value;
  return typeof percent === 'number' && percent >= 0 && percent <= 100 ? { functionName, percent } : undefined;
}

function parseFunctionMetrics(value: unknown): FunctionCallMetrics | undefined {
  if (!isObject(value)) return undefined;
  const { functionName, calls, allowed, rejected, errors, fallbacks, latencyMs } = value;
  if (!isNonEmptyString(functionName) || !isCount(calls) || !isCount(allowed) || !isCount(rejected)) return undefined;
  if (!isObject(errors) || !isObject(latencyMs)) return undefined;
  const parsedErrors: Partial<Record<LimiterErrorKind, number>> = {};
  for (const [kind, count] of Object.entries(errors)) {
    // An unknown kind (a newer package) still counts as an error.
    const known = isLimiterErrorKind(kind) ? kind : 'other';
    if (!isCount(count)) return undefined;
    parsedErrors[known] = (parsedErrors[known] ?? 0) + count;
  }
  // Decisions made without Redis (onRedisError / insurance), reported by limiters that have them.
  let parsedFallbacks: Record<string, number> | undefined;
  if (fallbacks !== undefined) {
    if (!isObject(fallbacks) || !Object.values(fallbacks).every(isCount)) return undefined;
    parsedFallbacks = fallbacks as Record<string, number>;
  }
  const latency: Partial<LatencySummary> = {};
  for (const field of ['count', 'p50', 'p90', 'p99', 'max'] as const) {
    const number = latencyMs[field];
    if (typeof number !== 'number' || !Number.isFinite(number) || number < 0) return undefined;
    latency[field] = number;
  }
  // Counters this reader does not know (a newer package) are kept as they are, after the checked ones.
  const metrics: FunctionCallMetrics = {
    ...value,
    functionName,
    calls,
    allowed,
    rejected,
    errors: parsedErrors,
    latencyMs: latency as LatencySummary,
  };
  if (parsedFallbacks) metrics.fallbacks = parsedFallbacks;
  return metrics;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isTimestamp(value: unknown): value is string {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value));
}

export const DEFAULT_REPORT_INTERVAL_MS = 15_000;

/** A report lives this many intervals, so one or two failed reports do not make an instance vanish. */
export const REPORT_TTL_INTERVALS = 3;
