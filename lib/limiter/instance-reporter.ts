import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { describeValue, isWholeNumberIn } from '../core/value-checks';
import type { RedisConnection } from '../core/redis-connection';
import type { FunctionCallMetrics } from '../core/call-metrics';
import type { CanarySplit } from '../core/function-selection';
import {
  DEFAULT_REPORT_INTERVAL_MS,
  InstanceReport,
  instanceReportKey,
  REPORT_TTL_INTERVALS,
} from '../core/instance-report';

/** What the reporter reads of a limiter (an interface: the limiter itself starts a reporter). */
export interface ReportedLimiter {
  readonly keyPrefix: string;
  readonly functionName: string;
  readonly canary?: CanarySplit;
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
/** While the first decisions flow, a report at most this often. */
const WARM_UP_REPORT_MS = 1000;
/** How long close() waits for the report's deletion. */
export const REPORT_DELETE_TIMEOUT_MS = 500;

/** Problems of a report's `intervalMs` and `instanceId`, each prefixed with `path` (`report.` in the options). */
export function describeReportSettingsProblems(
  settings: { intervalMs?: unknown; instanceId?: unknown },
  path: string,
): string[] {
  const { intervalMs, instanceId } = settings;
  const problems: string[] = [];
  if (intervalMs !== undefined && !isWholeNumberIn(intervalMs, MIN_INTERVAL_MS, MAX_INTERVAL_MS)) {
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
 * Records which function versions this process calls, and its counters, as JSON at
 * `<keyPrefix>__nsl:instance:<instanceId>` with a TTL: what `functions status` and `functions delete`
 * read. It reports at once, every interval, and once a second during its first interval of traffic.
 */
export class InstanceReporter {
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
  /** When the last report began (performance.now()). */
  private lastReportAt = 0;
  /** When decisions stop triggering reports: one interval after the first (performance.now()). */
  private warmUpEndsAt?: number;
  private warmedUp = false;
  /** Whether a report was ever sent, so that close() knows there may be one to delete. */
  private sent = false;
  private closed = false;

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

  /** Reports now, then every `intervalMs` (an unref'd timer). Idempotent; nothing after `close`. */
  start(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
    void this.tick();
  }

  /** Called after each decision: during its first interval, reports once a second (never after a quit). */
  noteDecision(): void {
    if (this.warmedUp || !this.timer) return;
    const now = performance.now();
    this.warmUpEndsAt ??= now + this.intervalMs;
    if (now >= this.warmUpEndsAt) this.warmedUp = true;
    else if (now - this.lastReportAt >= WARM_UP_REPORT_MS) void this.tick();
  }

  /** Stops reporting; the report is left to expire ({@link InstanceReporter.close} deletes it). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Stops reporting and deletes the report, waiting at most 500 ms (not while reconnecting); never
   * rejects (a failure is kept in {@link InstanceReporter.lastError}).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stop();
    if (!this.sent) return;
    // Sent after any report still in flight, on the same connection: Redis runs the two in order.
    const deleted = this.client.del(this.key).then(
      () => undefined,
      (error: unknown) => {
        this.lastError = error instanceof Error ? error : new Error(String(error));
      },
    );
    if (this.client.status !== 'ready') return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, REPORT_DELETE_TIMEOUT_MS);
      timer.unref();
    });
    await Promise.race([deleted, timedOut]);
    clearTimeout(timer);
  }

  /** Whether the timer is running. */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** The report as it would be written now. */
  buildReport(): InstanceReport {
    const canary = this.limiter.canary;
    const functions = this.limiter.metrics.snapshot();
    return {
      instanceId: this.instanceId,
      host: hostname(),
      pid: process.pid,
      startedAt: this.startedAt,
      reportedAt: new Date().toISOString(),
      intervalMs: this.intervalMs,
      functionName: this.limiter.functionName,
      canary: canary ? { functionName: canary.functionName, percent: canary.percent } : null,
      functions,
    };
  }

  /** Writes the report now (nothing after `close`); rejects when the write fails, keeping the error in `lastError`. */
  async reportNow(): Promise<void> {
    if (this.closed) return;
    this.sent = true;
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
    this.lastReportAt = performance.now();
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
