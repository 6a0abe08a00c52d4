import type { FunctionSelection } from '../core/function-selection';
import type { LibraryReload, LimiterBackend } from '../core/limiter-backend';
import type { LoadFunctionsPolicy } from '../core/lua-runner';
import { getFunctionContract } from '../redis/function-versions';
import { activateVersion, canaryInEffect, FunctionRouting, type ActiveVersion } from './function-routing';
import type { LimiterLogger } from './degraded-mode-log';
import type { RedisCallPolicy } from './redis-call-policy';
import type { ClockSource } from './sliding-window-limiter.interfaces';

/**
 * How a limiter comes to have a routing (which function version decides which key): detecting the
 * execution mode and loading or verifying the Lua on every master at start-up, and switching to
 * other functions at runtime. The decision path reads {@link LimiterStartup.routing} and, only while
 * there is none yet, waits for {@link LimiterStartup.start}.
 */
export class LimiterStartup {
  /** The routing in effect; undefined until start-up has succeeded. */
  routing?: FunctionRouting;
  /** What the limiter calls: configured until start-up, then what the routing really calls. */
  selection: FunctionSelection;
  private starting?: Promise<FunctionRouting>;
  private readonly stopWatchingReloads: () => void;

  constructor(
    private readonly backend: LimiterBackend,
    private readonly clock: ClockSource,
    private readonly loadFunctions: LoadFunctionsPolicy,
    /** Start-up's call policy: bounded in time, behind the connection's circuit breaker. */
    private readonly calls: RedisCallPolicy,
    selection: FunctionSelection,
    /** Called once, when the first routing is in effect. */
    private readonly onStarted: () => void,
    private readonly logger: LimiterLogger,
  ) {
    this.selection = selection;
    this.stopWatchingReloads = backend.onReload?.((reload) => this.logReload(reload)) ?? (() => undefined);
  }

  /** Stops what start-up keeps running: its subscriptions on the store. */
  close(): void {
    this.stopWatchingReloads();
  }

  /** The stable version's contract as configured or installed, for decisions made before a routing exists. */
  stableContract(): Pick<ActiveVersion, 'contract'> {
    return { contract: this.routing?.stable.contract ?? getFunctionContract(this.selection.functionName) };
  }

  /** The routing, starting up first if needed (bounded in time, behind the circuit breaker). */
  start(): Promise<FunctionRouting> {
    return this.calls.call(() => this.ready());
  }

  /** The routing, once start-up has finished (unbounded: for `use`, which waits for it). */
  ready(): Promise<FunctionRouting> {
    if (this.routing) return Promise.resolve(this.routing);
    this.starting ??= this.build(this.selection, this.loadFunctions).then(
      (routing) => {
        this.install(routing);
        // After install(): the first report names the functions the routing really calls.
        this.onStarted();
        return routing;
      },
      (error: unknown) => {
        // Let the next call try again (Redis may come up later).
        this.starting = undefined;
        throw error;
      },
    );
    return this.starting;
  }

  /**
   * Puts `selection` in effect once its functions are verified on every master (loaded there under
   * `auto`); the current routing stays when that fails.
   */
  async switchTo(selection: FunctionSelection): Promise<void> {
    await this.ready();
    // 'off' trusts the server at start-up, but a switch is only safe once checked.
    const policy: LoadFunctionsPolicy = this.loadFunctions === 'auto' ? 'auto' : 'verify';
    this.install(await this.build(selection, policy));
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

  /**
   * A server had lost a library and a call loaded it again. Expected under `auto`; under `verify`
   * the operator loads the functions, so a server that lost them is news they need (a restart without
   * persistence, a FUNCTION FLUSH): said at warning level, with what to do.
   */
  private logReload({ libraryName, functionName, nodes, policy }: LibraryReload): void {
    const where = nodes.join(', ');
    if (policy !== 'verify') {
      this.logger.log(
        `${where} had lost library ${libraryName} (a restart without persistence, or FUNCTION FLUSH); ` +
          `reloaded it (loadFunctions 'auto'), and ${functionName} decides again`,
      );
      return;
    }
    this.logger.warn(
      `loadFunctions is 'verify', but ${where} had lost library ${libraryName} (a restart without persistence, ` +
        `or FUNCTION FLUSH): reloaded the bundled ${libraryName}, the library verified at start-up, so that ` +
        `${functionName} decides again. Make the server keep its functions (appendonly or RDB persistence, ` +
        `or load them as it starts) and find out why it lost them`,
    );
  }

  private activate(functionName: string, policy: LoadFunctionsPolicy): Promise<ActiveVersion> {
    return activateVersion(this.backend, getFunctionContract(functionName), this.clock, policy);
  }
}
