import type { FallbackKind } from '../core/call-metrics';
import { FunctionCodeMismatchError } from '../core/errors/function-code-mismatch.error';
import { FunctionNameTakenError } from '../core/errors/function-name-taken.error';
import { FunctionNotLoadedError } from '../core/errors/function-not-loaded.error';
import { FunctionsUnavailableError } from '../core/errors/functions-unavailable.error';
import { messageOf } from '../redis/reply';

/** Where the limiter reports degraded mode: Nest's `Logger` fits, so does `console`. */
export interface LimiterLogger {
  log(message: string): void;
  warn(message: string): void;
  /** For what does not mend itself (a function missing on the server); `warn` when absent. */
  error?(message: string): void;
}

/** Failures that last until someone acts: a missing function not reloaded, other code, no functions at all. */
function needsOperator(cause: unknown): boolean {
  return (
    cause instanceof FunctionNotLoadedError ||
    cause instanceof FunctionsUnavailableError ||
    cause instanceof FunctionCodeMismatchError ||
    cause instanceof FunctionNameTakenError
  );
}

/** Logs degraded mode when it starts, a summary per interval while it lasts, and when Redis is back. */
export class DegradedModeLog {
  private since?: number;
  private lastSummaryAt = 0;
  private sinceSummary = { allow: 0, deny: 0, insurance: 0 };
  private total = 0;

  constructor(
    private readonly logger: LimiterLogger,
    private readonly intervalMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** A decision was made without Redis, because of `cause`. */
  fallback(kind: FallbackKind, cause: unknown): void {
    const now = this.now();
    if (this.since === undefined) {
      this.since = this.lastSummaryAt = now;
      this.say(
        cause,
        `Redis did not decide (${messageOf(cause)}); deciding by ${kind} until it does. ` +
          `A summary follows every ${Math.round(this.intervalMs / 1000)} s while this lasts.`,
      );
    }
    this.sinceSummary[kind]++;
    this.total++;
    if (now - this.lastSummaryAt >= this.intervalMs) {
      this.say(
        cause,
        `Still without Redis after ${seconds(now - this.since)} s: ${this.summary()} in the last ${seconds(now - this.lastSummaryAt)} s (last cause: ${messageOf(cause)})`,
      );
      this.lastSummaryAt = now;
      this.sinceSummary = { allow: 0, deny: 0, insurance: 0 };
    }
  }

  /** Redis decided again; cheap when nothing was degraded. */
  recovered(): void {
    if (this.since === undefined) return;
    this.logger.log(
      `Redis decides again after ${seconds(this.now() - this.since)} s; ${this.total} decisions were made without it`,
    );
    this.since = undefined;
    this.total = 0;
    this.sinceSummary = { allow: 0, deny: 0, insurance: 0 };
  }

  /** A warning; an error, naming the fix, when the cause lasts until someone acts. */
  private say(cause: unknown, message: string): void {
    if (this.logger.error && needsOperator(cause)) this.logger.error(message);
    else this.logger.warn(message);
  }

  private summary(): string {
    const parts = Object.entries(this.sinceSummary)
      .filter(([, count]) => count > 0)
      .map(([kind, count]) => `${count} by ${kind}`);
    return parts.length > 0 ? parts.join(', ') : 'no decisions';
  }
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(1);
}
