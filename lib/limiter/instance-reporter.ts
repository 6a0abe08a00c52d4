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
/** While the first decisions flow, a report at most this often. */
const WARM_UP_REPORT_MS = 1000;
/** How long close() waits for the report's deletion. */
export const REPORT_DELETE_TIMEOUT_MS = 500;

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
 *
 * A started reporter reports at once, then every interval; and for one interval from its first
 * decision, at most once a second while decisions flow, so that a new instance shows its traffic at
 * once rather than after its first interval. {@link InstanceReporter.close} deletes the report, so a
 * stopped instance leaves the list at once.
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

  /**
   * Reports now, then every `intervalMs`. The timer never keeps the process alive. Idempotent; does
   * nothing after {@link InstanceReporter.close}.
   */
  start(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
    void this.tick();
  }

  /**
   * The limiter calls this after each decision it returns. For one interval from the first decision,
   * reports when the last report is a second old, so that `functions status` shows a new instance's
   * traffic within a second instead of after its first interval. Sent from the decision itself
   * rather than from a timer: the report goes out while the application uses the connection, never
   * after it has asked the connection to quit (a command sent after QUIT can make the QUIT fail).
   * A clock read per decision during that interval; nothing after.
   */
  noteDecision(): void {
    if (this.warmedUp || !this.timer) return;
    const now = performance.now();
    this.warmUpEndsAt ??= now + this.intervalMs;
    if (now >= this.warmUpEndsAt) this.warmedUp = true;
    else if (now - this.lastReportAt >= WARM_UP_REPORT_MS) void this.tick();
  }

  /** Stops reporting. The report is left to expire (after three intervals); {@link InstanceReporter.close} deletes it. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Stops reporting for good and deletes the report, so that `functions status` stops listing this
   * instance at once instead of when the report expires. Best effort: waits at most 500 ms for the
   * deletion (not at all while the client is reconnecting: the deletion is then queued and lands if
   * the client reconnects), never rejects (a failure is kept in {@link InstanceReporter.lastError}),
   * and keeps no timer alive. `SlidingWindowLimiter.close()` calls it.
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

  /**
   * Writes the report now. Rejects when the write fails (and records the error in
   * {@link InstanceReporter.lastError}). Writes nothing after {@link InstanceReporter.close}.
   */
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
