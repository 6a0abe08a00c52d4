import { Inject, Injectable, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
// Types only: erased from the build. @nestjs/terminus is an optional peer dependency, loaded on demand.
import type { HealthIndicatorService } from '@nestjs/terminus';
import type { Redis } from 'ioredis';
import { loadOptionalPeer } from '../core/optional-peer';
import { canaryInEffect } from '../limiter/function-routing';
import { withTimeout } from '../limiter/with-timeout';
import type { RateLimitConnection } from '../nest/rate-limit-connection';
import { RATE_LIMIT_CONNECTION } from '../nest/rate-limit.constants';
import type { FunctionContract } from '../core/function-contract';
import { loadCommandFor } from '../redis/function-loader';
import { functionsUnavailableOn } from '../redis/function-support';
import { findFunctionContract } from '../redis/function-versions';
import { librariesOf } from '../redis/loaded-libraries';
import { isCluster, masterNodes, nodeAddress } from '../redis/redis-nodes';
import { messageOf } from '../redis/reply';
import { readServerInfo } from '../redis/server-info';
import { DEGRADED_WINDOW_MS } from '../limiter/degraded-stretch';
import { SlidingWindowLimiter, type DegradedMode } from 'nestjs-sliding-limit';
import type { RedisConnection } from '../core/redis-connection';
import type { FallbackKind, ServerIdentity } from 'nestjs-sliding-limit';

/** How long one health check may wait for a node, by default: below a Kubernetes probe's 1 s default. */
export const DEFAULT_HEALTH_TIMEOUT_MS = 500;

/** Options of {@link SlidingLimitHealthIndicator.isHealthy}. */
export interface SlidingLimitHealthOptions {
  /** How long to wait for each master (asked in parallel), in milliseconds. Default 500. */
  timeoutMs?: number;
  /** Down while the latest decision made without Redis is at most this many ms old. Default 10,000; 0 ignores them. */
  degradedWindowMs?: number;
}

/** A stretch of decisions made without Redis, as the indicator reports it. */
export interface SlidingLimitHealthDegraded {
  /** When the first of them was made (ISO 8601). */
  since: string;
  /** When the latest was made (ISO 8601). */
  latest: string;
  /** How many were made since `since`. */
  decisions: number;
  /** The same, by how they were made: `allow` / `deny` (the `onRedisError` policy), `insurance`. */
  byKind: Partial<Record<FallbackKind, number>>;
  /** Why Redis did not make the latest (the error's message). */
  lastCause: string;
}

/** What the indicator reports beside `status`. */
export type SlidingLimitHealthDetails = {
  /** `function`: reachability and functions checked; `script` (Redis 5/6): reachability only; `backend`: nothing. */
  mode: 'function' | 'script' | 'backend';
  /** Every master checked, as host:port (the server itself when standalone). */
  nodes: string[];
  /** What each master that answered runs (`redis` or `valkey`, and its own version). */
  servers?: ({ node: string } & ServerIdentity)[];
  /** Functions that must be loaded on every master: the active one, and the canary's when one is set. */
  functions: string[];
  /** Masters that did not answer in time, or could not be asked, with the reason. */
  unreachable?: { node: string; error: string }[];
  /** Functions a master lacks, one entry per master and function. */
  missing?: { node: string; functionName: string; libraryName: string }[];
  /** Set (and down) while the limiter has not started after an attempt failed. */
  startup?: { since: string; attempts: number; lastError: string };
  /** Set (and down) while decisions are made without Redis, e.g. by a Redis out of memory that answers PING. */
  degraded?: SlidingLimitHealthDegraded;
  /** What is wrong and how to fix it (set when down), or why nothing was checked. */
  message?: string;
};

/** The indicator's result, terminus' `HealthIndicatorResult` shape (so these types never require terminus). */
export type SlidingLimitHealthResult<Key extends string = string> = Record<
  Key,
  { status: 'up' | 'down' } & SlidingLimitHealthDetails
>;

type Terminus = typeof import('@nestjs/terminus');

/** ioredis statuses in which a command is sent at once (`wait`: lazy, the command connects). */
const SENDING_STATUSES: ReadonlySet<string> = new Set(['ready', 'wait']);

interface NodeReport {
  node: string;
  /** Undefined when INFO failed: a user whose ACL denies INFO is still healthy. */
  server?: ServerIdentity;
  error?: string;
  /** Allow functions not loaded on this master. */
  missing: FunctionContract[];
}

/**
 * A health indicator for `@nestjs/terminus` (an optional peer dependency): whether every Redis master
 * answers PING in time and has the active function and the canary's loaded.
 *
 * ```ts
 * @Module({ imports: [TerminusModule], controllers: [HealthController], providers: [SlidingLimitHealthIndicator] })
 * export class HealthModule {}
 *
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.rateLimit.isHealthy('rateLimit')]); }
 * ```
 *
 * A Redis that is down or reconnecting is reported at once, never queued behind.
 */
@Injectable()
export class SlidingLimitHealthIndicator {
  private readonly terminus: Terminus;
  private indicators?: HealthIndicatorService;

  /** @throws RateLimitConfigError when `@nestjs/terminus` is not installed. @internal */
  constructor(
    @Inject(RATE_LIMIT_CONNECTION) private readonly connection: RateLimitConnection,
    private readonly limiter: SlidingWindowLimiter,
    @Optional() private readonly moduleRef?: ModuleRef,
  ) {
    // At bootstrap rather than at the first probe.
    this.terminus = loadOptionalPeer<Terminus>(
      '@nestjs/terminus',
      'SlidingLimitHealthIndicator',
      'SlidingLimitHealthIndicator needs @nestjs/terminus (an optional peer dependency of nestjs-sliding-limit): npm install @nestjs/terminus',
    );
  }

  /**
   * Checks Redis for the rate limiter. Never throws: a problem is `status: 'down'` (a 503).
   * @param key the key of the result in the health report. Default `rateLimit`.
   */
  async isHealthy<const Key extends string = 'rateLimit'>(
    key: Key = 'rateLimit' as Key,
    options: SlidingLimitHealthOptions = {},
  ): Promise<SlidingLimitHealthResult<Key>> {
    const session = this.indicatorService().check(key);
    const details = await this.inspect(options.timeoutMs ?? DEFAULT_HEALTH_TIMEOUT_MS);
    const windowMs = options.degradedWindowMs ?? DEGRADED_WINDOW_MS;
    const { startup, degraded } = this.limiter.status(windowMs);
    if (startup) {
      const { sinceMs, attempts, lastError } = startup;
      details.startup = { since: new Date(sinceMs).toISOString(), attempts, lastError: lastError.message };
    }
    if (degraded && windowMs > 0) details.degraded = degradedDetails(degraded);
    const healthy = !details.unreachable && !details.missing && !details.startup && !details.degraded;
    return healthy ? session.up(details) : session.down(down(details, this.connection.client));
  }

  private async inspect(timeoutMs: number): Promise<SlidingLimitHealthDetails> {
    const client = this.connection.client;
    if (!client)
      return {
        mode: 'backend',
        nodes: [],
        functions: [],
        message: 'decisions run in a backend without Redis: nothing to check',
      };
    const mode = this.limiter.mode === 'script' ? 'script' : 'function';
    const contracts = mode === 'function' ? this.expectedContracts() : [];
    const functions = contracts.map((contract) => contract.allowFunction);

    const clusterDown = (error: string) =>
      down({ mode, nodes: [], functions, unreachable: [{ node: 'cluster', error }] }, client);
    if (isCluster(client) && !SENDING_STATUSES.has(client.status))
      return clusterDown(`the cluster connection is ${client.status}`);
    let nodes: Redis[];
    try {
      nodes = await withTimeout(masterNodes(client), timeoutMs);
    } catch (error) {
      return clusterDown(messageOf(error));
    }
    const reports = await Promise.all(nodes.map((node) => this.inspectNode(node, contracts, timeoutMs)));
    reports.sort((a, b) => a.node.localeCompare(b.node, undefined, { numeric: true }));

    const details: SlidingLimitHealthDetails = { mode, nodes: reports.map((report) => report.node), functions };
    const servers = reports.flatMap(({ node, server }) => (server ? [{ node, ...server }] : []));
    if (servers.length > 0) details.servers = servers;
    const unreachable = reports
      .filter((report) => report.error !== undefined)
      .map((report) => ({ node: report.node, error: report.error as string }));
    const missing = reports.flatMap((report) =>
      report.missing.map((contract) => ({
        node: report.node,
        functionName: contract.allowFunction,
        libraryName: contract.libraryName,
      })),
    );
    if (reports.length === 0) unreachable.push({ node: 'cluster', error: 'no master is known' });
    if (unreachable.length > 0) details.unreachable = unreachable;
    if (missing.length > 0) details.missing = missing;
    return details.unreachable || details.missing ? down(details, client) : details;
  }

  /** The contracts of the active function and of the canary (in that order), each once. */
  private expectedContracts(): FunctionContract[] {
    const names = [this.limiter.functionName];
    // Before start-up the limiter reports its canary as configured, which may take no traffic.
    const canary = canaryInEffect({ functionName: this.limiter.functionName, canary: this.limiter.canary });
    if (canary) names.push(canary.functionName);
    return [...new Set(names.map(findFunctionContract))].filter((contract) => contract !== undefined);
  }

  private async inspectNode(
    node: Redis,
    contracts: readonly FunctionContract[],
    timeoutMs: number,
  ): Promise<NodeReport> {
    const address = nodeAddress(node);
    // A command to a reconnecting client would wait in its offline queue: report it instead.
    if (!SENDING_STATUSES.has(node.status))
      return { node: address, error: `the connection is ${node.status}`, missing: [] };
    const server = withTimeout(readServerInfo(node), timeoutMs).catch(() => undefined);
    try {
      const missing = await withTimeout(missingOn(node, contracts), timeoutMs);
      return { node: address, server: await server, missing };
    } catch (error) {
      // A master without FUNCTION (renamed, or no Lua engine) answers; say what it lacks and the fix.
      const unavailable = await withTimeout(functionsUnavailableOn(node, error), timeoutMs).catch(() => undefined);
      return { node: address, server: await server, error: messageOf(unavailable ?? error), missing: [] };
    }
  }

  /** Terminus' HealthIndicatorService: the application's instance when TerminusModule is imported. */
  private indicatorService(): HealthIndicatorService {
    if (!this.indicators) {
      const { HealthIndicatorService: Service } = this.terminus;
      let registered: HealthIndicatorService | undefined;
      try {
        registered = this.moduleRef?.get(Service, { strict: false });
      } catch {
        // TerminusModule not imported (or no Nest at all): the service is stateless, make one.
      }
      this.indicators = registered ?? new Service();
    }
    return this.indicators;
  }
}

/** PINGs `node`, then lists which of `contracts` it lacks (exact library name, with the allow function). */
async function missingOn(node: Redis, contracts: readonly FunctionContract[]): Promise<FunctionContract[]> {
  await node.ping();
  const loaded = await Promise.all(
    contracts.map(async (contract) => {
      const [library] = await librariesOf(node, contract.libraryName, false);
      return library !== undefined && library.functions.includes(contract.allowFunction);
    }),
  );
  return contracts.filter((_, i) => !loaded[i]);
}

function degradedDetails({ sinceMs, lastMs, decisions, lastCause }: DegradedMode): SlidingLimitHealthDegraded {
  const counts = Object.entries(decisions);
  return {
    since: new Date(sinceMs).toISOString(),
    latest: new Date(lastMs).toISOString(),
    decisions: counts.reduce((total, [, count]) => total + count, 0),
    byKind: Object.fromEntries(counts.filter(([, count]) => count !== 0)),
    lastCause: lastCause.message,
  };
}

/** `details` with a message naming every problem and its fix (commands naming `connection`'s servers). */
function down(details: SlidingLimitHealthDetails, connection: RedisConnection | undefined): SlidingLimitHealthDetails {
  const problems: string[] = [];
  if (details.startup) {
    const { since, attempts, lastError } = details.startup;
    problems.push(`the limiter has not started: ${lastError} (retrying since ${since}, ${attempts} attempts)`);
  }
  if (details.degraded) {
    const { since, latest, decisions, byKind, lastCause } = details.degraded;
    const kinds = Object.entries(byKind).map(([kind, count]) => `${count} by ${kind}`);
    const ago = ((Date.now() - Date.parse(latest)) / 1000).toFixed(1);
    problems.push(
      `${decisions} decisions made without Redis since ${since} (${kinds.join(', ')}), the latest ${ago} s ago: ${lastCause}`,
    );
  }
  if (details.unreachable) {
    problems.push(
      `Redis unreachable: ${details.unreachable.map((entry) => `${entry.node} (${entry.error})`).join(', ')}`,
    );
  }
  const byFunction = new Map<string, string[]>();
  for (const entry of details.missing ?? [])
    byFunction.set(entry.functionName, [...(byFunction.get(entry.functionName) ?? []), entry.node]);
  for (const [functionName, nodes] of byFunction) {
    const contract = findFunctionContract(functionName) as FunctionContract;
    problems.push(
      `${functionName} (library ${contract.libraryName}) is not loaded on ${nodes.join(', ')}; load it on each: ${connection ? loadCommandFor(contract, connection) : 'npx nestjs-sliding-limit functions load ' + contract.version}`,
    );
  }
  return { ...details, message: problems.join('; ') };
}
