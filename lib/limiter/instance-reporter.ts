import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { describeValue } from '../core/value-checks';
import type { RedisConnection } from '../core/redis-connection';
import type { FunctionCallMetrics } from '../core/call-metrics';
import type { CanarySplit } from '../core/function-selection';
import {
  DEFAULT_REPORT_INTERVAL_MS,
  InstanceReport,
  instanceReportKey,
  REPORT_TTL_INTERVALS,
} from '../core/instance-report';

/**
 * What the reporter reads of a limiter: a `SlidingWindowLimiter` has all of it. (An interface, not the
 * class, because the limiter itself starts a reporter.)
 */
export interface ReportedLimiter {
  /** Prefix of the limiter's keys; the report is written under it. */
  readonly keyPrefix: string;
  /** The stable function the limiter calls. */
  readonly functionName: string;
  /** The canary split in effect, if any. */
  readonly canary?: CanarySplit;
  /** The limiter's counters per function name. */
  readonly metrics: { snapshot(): FunctionCallMetrics[] };
}

/** Options of {@link InstanceReporter}. */
export interface InstanceReporterOptions {
  /** The limiter whose selection and metrics are reported. */
  limiter: ReportedLimiter;
  /** Where the report is written; usually the limiter's own client. Never closed by the reporter. */
  client: RedisConnection;
  /** How often to report, in ms. Default 15000. The report expires after three intervals. */
  intervalMs?: number;
  /** Identifies this process in the report key. Default `<hostname>:<pid>:<random>`. */
  instanceId?: string;
}
const MIN_INTERVAL_MS = 100;
const MAX_INTERVAL_MS = 24 * 60 * 60 * 1000;

/**
 * Problems of a report's `intervalMs` and `instanceId` (undefined ones take their defaults), each
 * prefixed with `path` (`report.` from the limiter options). Shared with option validation, so a bad
 * `report` fails with the other options.
 */
export function describeReportSettingsProblems(
  settings: { intervalMs?: unknown; instanceId?: unknown },
  path: string,
): string[] {
  const { intervalMs, instanceId } = settings;
  const problems: string[] = [];
  if (
    intervalMs !== undefined &&
    !(
      Number.isInteger(intervalMs) &&
      (intervalMs as number) >= MIN_INTERVAL_MS &&
      (intervalMs as number) <= MAX_INTERVAL_MS
    )
  ) {
    problems.push(
      `${path}intervalMs must be a whole number of milliseconds from ${MIN_INTERVAL_MS} to ${MAX_INTERVAL_MS}, got ${describeValue(intervalMs)}`,
    );
  }
  if (instanceId !== undefined && !(typeof instanceId === 'string' && /^\S{1,200}$/.test(instanceId))) {
    problems.push(`${path}instanceId must be 1 to 200 characters without spaces, got ${describeValue(instanceId)}`);
  }
  return problems;
}

/**
 * Records, under the limiter's key prefix and with a TTL, which function versions this process
 * calls and its counters: `<keyPrefix>__nsl:instance:<instanceId>` = JSON {@link InstanceReport}.
 * `npx nestjs-sliding-limit functions status` reads these reports, and `functions delete` refuses
 * to delete a version a live report still names.
 */
export class InstanceReporter {
  /** The id in the report key. */
  readonly instanceId: string;
  readonly intervalMs: number;
  /** The report key. */
  readonly key: string;
  /** Why the last report failed; undefined once a report succeeds. Timer failures are never thrown. */
  lastError?: Error;
  /** When the last report was written. */
  lastReportedAt?: Date;

  private readonly limiter: ReportedLimiter;
  private readonly client: RedisConnection;
  private readonly startedAt = new Date().toISOString();
  private timer?: NodeJS.Timeout;
  private inFlight?: Promise<void>;

  /** @throws RateLimitConfigError listing every invalid option. */
  constructor(options: InstanceReporterOptions) {
    const {
      limiter,
      client,
      intervalMs = DEFAULT_REPORT_INTERVAL_MS,
      instanceId = defaultInstanceId(),
    } = options ?? ({} as InstanceReporterOptions);
    const problems: string[] = [];
    if (typeof limiter !== 'object' || limiter === null || typeof limiter.metrics?.snapshot !== 'function') {
      problems.push(`limiter must be a SlidingWindowLimiter, got ${describeValue(limiter)}`);
    }
    if (typeof client !== 'object' || client === null || typeof (client as { set?: unknown }).set !== 'function') {
      problems.push(`client must be an ioredis Redis or Cluster instance, got ${describeValue(client)}`);
    }
    problems.push(...describeReportSettingsProblems({ intervalMs, instanceId }, ''));
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'InstanceReporter');

    this.limiter = limiter;
    this.client = client;
    this.intervalMs = intervalMs;
    this.instanceId = instanceId;
    this.key = instanceReportKey(limiter.keyPrefix, instanceId);
  }

  /** Reports now, then every `intervalMs`. The timer never keeps the process alive. Idempotent. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
    void this.tick();
  }

  /** Stops reporting. The report is left to expire (after three intervals), it is not deleted. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Whether the timer is running. */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** The report as it would be written now. */
  buildReport(): InstanceReport {
    const canary = this.limiter.canary;
    return {
      instanceId: this.instanceId,
      host: hostname(),
      pid: process.pid,
      startedAt: this.startedAt,
      reportedAt: new Date().toISOString(),
      intervalMs: this.intervalMs,
      functionName: this.limiter.functionName,
      canary: canary ? { functionName: canary.functionName, percent: canary.percent } : null,
      functions: this.limiter.metrics.snapshot(),
    };
  }

  /** Writes the report now. Rejects when the write fails (and records the error in {@link InstanceReporter.lastError}). */
  async reportNow(): Promise<void> {
    try {
      await this.client.set(this.key, JSON.stringify(this.buildReport()), 'PX', REPORT_TTL_INTERVALS * this.intervalMs);
      this.lastError = undefined;
      this.lastReportedAt = new Date();
    } catch (error) {
      this.lastError = error instanceof Error ? error : new Error(String(error));
      throw error;
    }
  }

  /** A timer tick: skipped while the previous report is still pending; failures are kept, not thrown. */
  private async tick(): Promise<void> {
    if (this.inFlight) return;
    this.inFlight = this.reportNow().catch(() => undefined);
    try {
      await this.inFlight;
    } finally {
      this.inFlight = undefined;
    }
  }
}

function defaultInstanceId(): string {
  const host = hostname().replace(/\s+/g, '-').slice(0, 120) || 'host';
  return `${host}:${process.pid}:${randomBytes(3).toString('hex')}`;
}
