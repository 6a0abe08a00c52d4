import type { LimiterSettings } from '../limiter/limiter-options';
import type { FunctionNeeds } from '../limiter/sliding-window-limiter.interfaces';
import { DEFAULT_FUNCTION_NAME, findFunctionContract } from '../redis/function-versions';
import { hasValues, type HandlerPlan } from './limit-plan';

/** Entries a sorted set keeps in Redis' compact listpack encoding (`zset-max-listpack-entries` default). */
const LISTPACK_ENTRIES = 128;
const BYTES_PER_ENTRY = 100;

/** What the plans need that the configured versions cannot do (a cost, `precisionMs` or a shadow limit on v1). */
export function describeVersionProblems(plans: readonly HandlerPlan[], settings: LimiterSettings): string[] {
  const functionName = settings.functionName ?? DEFAULT_FUNCTION_NAME;
  const canary = settings.canary && settings.canary.percent > 0 ? settings.canary.functionName : undefined;
  const problems: string[] = [];
  for (const [role, name] of [
    ['functionName', functionName],
    ['canary.functionName', canary],
  ] as const) {
    const contract = name === undefined ? undefined : findFunctionContract(name);
    // An unknown name is reported by the option checks.
    if (!contract) continue;
    for (const plan of plans) {
      if (contract.full) continue;
      const needs: string[] = [];
      if (isWeighted(plan)) needs.push('a cost');
      if (isBucketedPlan(plan)) needs.push('precisionMs');
      // v1 would enforce a shadow limit: never a quiet change.
      if (plan.hasShadow) needs.push("a shadow limit (mode: 'shadow', a candidate, or limitMode: 'shadow')");
      if (needs.length > 0) {
        problems.push(
          `${plan.route}: ${needs.join(' and ')} needs ${DEFAULT_FUNCTION_NAME}, but ${role} is ${name}; ` +
            `set ${role} to ${DEFAULT_FUNCTION_NAME}`,
        );
      }
    }
  }
  return problems;
}

/** What the plans need of the limiter's functions, by route: told to the limiter, which checks each `use()`. */
export function functionNeedsOf(plans: Iterable<HandlerPlan>): FunctionNeeds {
  const weighted: string[] = [];
  const bucketed: string[] = [];
  const shadow: string[] = [];
  for (const plan of plans) {
    if (isWeighted(plan)) weighted.push(plan.route);
    if (isBucketedPlan(plan)) bucketed.push(plan.route);
    if (plan.hasShadow) shadow.push(plan.route);
  }
  return { weighted, bucketed, shadow };
}

/** Whether a plan's requests can weigh more than 1. */
function isWeighted(plan: HandlerPlan): boolean {
  return plan.costFunction !== undefined || (plan.decisionOptions?.cost ?? 1) !== 1;
}

/** Whether one of a plan's limits is a bounded-memory window. */
function isBucketedPlan(plan: HandlerPlan): boolean {
  return plan.limits.some((limit) => limit.precisionMs !== undefined);
}

/** One line per log limit past the compact encoding (limit above 128), naming what bounds it. */
export function describeBigLogs(plans: readonly HandlerPlan[]): string[] {
  const seen = new Set<string>();
  const lines: string[] = [];
  for (const plan of plans) {
    for (const limit of plan.limits.filter(hasValues)) {
      if (limit.precisionMs !== undefined || limit.limit <= LISTPACK_ENTRIES || seen.has(limit.name)) continue;
      seen.add(limit.name);
      const kilobytes = Math.round((limit.limit * BYTES_PER_ENTRY) / 1024);
      const precisionMs = Math.max(Math.ceil(limit.windowMs / 60), Math.ceil(limit.windowMs / 1000));
      lines.push(
        `limit "${limit.name}" (${limit.limit} per ${limit.windowMs} ms) is a sliding window log: a full key holds ` +
          `${limit.limit} entries, about ${kilobytes} KB in Redis (~${BYTES_PER_ENTRY} bytes per entry past ` +
          `${LISTPACK_ENTRIES}); set precisionMs (e.g. ${precisionMs}) for a bounded-memory window`,
      );
    }
  }
  return lines;
}

/** Windows shorter than this are probably seconds written where milliseconds are meant (`windowMs: 60`). */
export const SHORT_WINDOW_MS = 1000;

/** One warning per limit whose window is under a second (`windowMs: 60` is 60 ms, maybe meant as seconds). */
export function describeShortWindows(plans: readonly HandlerPlan[]): string[] {
  const routesByLimit = new Map<string, { windowMs: number; named: boolean; routes: string[] }>();
  for (const plan of plans) {
    for (const limit of plan.limits.filter(hasValues)) {
      if (limit.windowMs >= SHORT_WINDOW_MS) continue;
      const entry = routesByLimit.get(limit.name) ?? {
        windowMs: limit.windowMs,
        // Unnamed limits are named after their route and window.
        named: limit.name !== `${plan.route}:${limit.windowMs}`,
        routes: [],
      };
      entry.routes.push(plan.route);
      routesByLimit.set(limit.name, entry);
    }
  }
  return [...routesByLimit].map(([name, { windowMs, named, routes }]) => {
    const shown =
      routes.length > 3 ? `${routes.slice(0, 3).join(', ')} and ${routes.length - 3} more` : routes.join(', ');
    return (
      `${shown}: ${named ? `limit "${name}": ` : ''}windowMs is ${windowMs} milliseconds; ` +
      `if ${windowMs} seconds were meant, write windowMs: ${withSeparators(windowMs * 1000)}`
    );
  });
}

/** `60_000`: a number as a TypeScript literal with digit separators. */
function withSeparators(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+$)/g, '_');
}
