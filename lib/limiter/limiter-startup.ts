import type { FunctionContract } from '../core/function-contract';
import type { FunctionSelection } from '../core/function-selection';
import type { LimiterBackend } from '../core/limiter-backend';
import type { LoadFunctionsPolicy } from '../core/lua-runner';
import { getFunctionContract } from '../redis/function-versions';
import { activateVersion, canaryInEffect, FunctionRouting, isInCanary, type ActiveVersion } from './function-routing';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { RedisUnavailableError } from '../core/errors/redis-unavailable.error';
import { scrubSecrets } from '../core/redact';
import { errorKindOf, isUnanswered } from '../redis/error-kind';
import { messageOf } from '../redis/reply';
import type { LimiterLogger } from './degraded-mode-log';
import { logReload, logStarted, logStartupFailed } from './startup-log';
import { withTimeout } from './with-timeout';
import type { ClockSource, FunctionNeeds, StartupFailure } from './sliding-window-limiter.interfaces';
import { describeUnmetNeeds } from './version-capabilities';

/** Start-up (loading or verifying functions) may take longer than a decision: `init()` waits at least this long. */
export const MIN_STARTUP_TIMEOUT_MS = 2000;
/** How often a failed start-up is tried again in the background (and whenever the connection is ready). */
export const STARTUP_RETRY_MS = 1000;

/**
 * How a limiter comes to have a routing (which version decides which key): loading or verifying the
 * Lua at start-up, and switching at runtime. Decisions wait for the first attempt at most `timeoutMs`;
 * once one failed, they go to the failure policy while start-up is retried in the background.
 */
export class LimiterStartup {
  /** The routing in effect; undefined until start-up has succeeded. */
  routing?: FunctionRouting;
  /** What the limiter calls: configured until start-up, then what the routing really calls. */
  selection: FunctionSelection;
  private attempt?: Promise<FunctionRouting>;
  private attempts = 0;
  private failure?: { sinceMs: number; error: unknown };
  private retryTimer?: ReturnType<typeof setTimeout>;
  private closed = false;
  private readonly startupTimeoutMs: number;
  private readonly stopWatching: (() => void)[];
  private readonly needs = new Set<() => FunctionNeeds>();

  constructor(
    private readonly backend: LimiterBackend,
    private readonly clock: ClockSource,
    private readonly loadFunctions: LoadFunctionsPolicy,
    /** How long a decision may wait for start-up (the decisions' `timeoutMs`). */
    private readonly timeoutMs: number,
    selection: FunctionSelection,
    /** Called once, when the first routing is in effect. */
    private readonly onStarted: () => void,
    private readonly logger: LimiterLogger,
  ) {
    this.selection = selection;
    this.startupTimeoutMs = Math.max(timeoutMs, MIN_STARTUP_TIMEOUT_MS);
    this.stopWatching = [
      backend.onReady(() => this.retryNow()),
      backend.onReload?.((reload) => logReload(this.logger, reload)) ?? (() => undefined),
    ];
  }

  /** Stops what start-up keeps running: its retries and its subscriptions on the store. */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    for (const stop of this.stopWatching) stop();
  }

  /** The stable version's contract as configured or installed, for decisions made before a routing exists. */
  stableContract(): FunctionContract {
    return this.routing?.stable.contract ?? getFunctionContract(this.selection.functionName);
  }

  /** The contract that will decide `identity` once started (the canary's for its share): checked before start-up. */
  configuredContractFor(identity: string): FunctionContract {
    const canary = canaryInEffect(this.selection);
    const picked = canary && isInCanary(identity, canary.percent) ? canary : this.selection;
    return getFunctionContract(picked.functionName);
  }

  /** Set while start-up has failed and is being tried again. */
  get failing(): StartupFailure | undefined {
    if (!this.failure || this.routing) return undefined;
    const { sinceMs, error } = this.failure;
    return { sinceMs, attempts: this.attempts, lastError: { kind: errorKindOf(error), message: messageOf(error) } };
  }

  /** For a decision: the routing, starting up if needed (waiting about `timeoutMs`, none once it failed). */
  start(): Promise<FunctionRouting> {
    if (this.routing) return Promise.resolve(this.routing);
    if (this.failure) return Promise.reject(this.failure.error);
    return this.waitAtMost(this.timeoutMs);
  }

  /** For `init()`: an attempt now (or the one in flight), waited for at most about max(`timeoutMs`, 2 s). */
  init(): Promise<FunctionRouting> {
    return this.waitAtMost(this.startupTimeoutMs);
  }

  /** The routing, once start-up has finished (unbounded: for `use`, which waits for it). */
  ready(): Promise<FunctionRouting> {
    if (this.routing) return Promise.resolve(this.routing);
    this.attempt ??= this.tryOnce();
    return this.attempt;
  }

  private async waitAtMost(ms: number): Promise<FunctionRouting> {
    try {
      return await withTimeout(this.ready(), ms);
    } catch (error) {
      // Waited for in vain: the attempt goes on, the decisions stop waiting for it.
      if (!this.routing && isUnanswered(error)) this.failed(error);
      throw error;
    }
  }

  private tryOnce(): Promise<FunctionRouting> {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.attempts++;
    return this.build(this.selection, this.loadFunctions).then(
      (routing) => {
        this.attempt = undefined;
        this.install(routing);
        if (this.failure) logStarted(this.logger, Date.now() - this.failure.sinceMs, this.attempts, routing);
        this.failure = undefined;
        // After install(): the first report names the functions the routing really calls.
        this.onStarted();
        return routing;
      },
      (error: unknown) => {
        this.attempt = undefined;
        // As the call policy reports it: a connection that failed is Redis being unavailable.
        const failure =
          isUnanswered(error) && !(error instanceof RedisUnavailableError)
            ? new RedisUnavailableError(messageOf(error), 'error', { cause: error })
            : error;
        this.failed(failure);
        throw failure;
      },
    );
  }

  /** Start-up failed: said once, then tried again in the background until it succeeds. */
  private failed(error: unknown): void {
    const cause = scrubSecrets(error);
    if (this.failure) this.failure.error = cause;
    else {
      this.failure = { sinceMs: Date.now(), error: cause };
      logStartupFailed(this.logger, cause, STARTUP_RETRY_MS);
    }
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.retryNow();
    }, STARTUP_RETRY_MS);
    // A retry never keeps the process alive.
    this.retryTimer.unref?.();
  }

  /** Another attempt, unless one is in flight or none is needed (started, or nothing failed yet). */
  private retryNow(): void {
    if (this.closed || this.routing || this.attempt || !this.failure) return;
    // A failure is recorded by tryOnce itself.
    this.ready().catch(() => undefined);
  }

  /** Puts `selection` in effect once its functions are verified on every master; the current stays on failure. */
  async switchTo(selection: FunctionSelection): Promise<void> {
    const problems = this.describeUnmetNeeds(selection);
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'SlidingWindowLimiter.use');
    await this.ready();
    // 'off' trusts the server at start-up, but a switch is only safe once checked.
    const policy: LoadFunctionsPolicy = this.loadFunctions === 'auto' ? 'auto' : 'verify';
    this.install(await this.build(selection, policy));
  }

  /** Registers what callers need of the functions, read at each switch; returns the function that removes it. */
  addNeeds(needs: () => FunctionNeeds): () => void {
    // A wrapper: the same function registered twice is two registrations, removed one by one.
    const entry = () => needs();
    this.needs.add(entry);
    return () => this.needs.delete(entry);
  }

  /** What the registered needs ask of `selection`'s functions (a canary only while it takes traffic). */
  private describeUnmetNeeds(selection: FunctionSelection): string[] {
    const canary = canaryInEffect(selection);
    const targets: [string, string][] = [['functionName', selection.functionName]];
    if (canary) targets.push(['canary.functionName', canary.functionName]);
    const problems: string[] = [];
    for (const needs of this.needs) {
      const asked = needs();
      for (const [role, name] of targets) problems.push(...describeUnmetNeeds(getFunctionContract(name), role, asked));
    }
    return problems;
  }

  /** Puts a routing in effect; `selection` then reports what it really calls. */
  private install(routing: FunctionRouting): void {
    this.routing = routing;
    this.selection = routing.selection;
  }

  private async build(selection: FunctionSelection, policy: LoadFunctionsPolicy): Promise<FunctionRouting> {
    const stable = await this.activate(selection.functionName, policy);
    const canary = canaryInEffect(selection);
    if (!canary) return new FunctionRouting(stable);
    return new FunctionRouting(stable, await this.activate(canary.functionName, policy), canary.percent);
  }

  private activate(functionName: string, policy: LoadFunctionsPolicy): Promise<ActiveVersion> {
    return activateVersion(this.backend, getFunctionContract(functionName), this.clock, policy);
  }
}
