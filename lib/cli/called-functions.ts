import { listSome } from './format';
import type { FoundReport } from './instance-reports';
import { nameFunction, type NamedFunction } from './libraries';

/** An instance calling a function, as its report names it. */
export interface Caller {
  instanceId: string;
  /** The key prefix of its limiter. */
  prefix: string;
  /** Whether it sends the function a canary share rather than all its calls. */
  canary: boolean;
}

/** A function name live instances call, and who calls it. */
export interface CalledFunction extends NamedFunction {
  /** How many instances call it as their stable function. */
  stable: number;
  /** How many instances send it a canary share. */
  canary: number;
  callers: Caller[];
}

/** The function names the reports name, stable and canary, sorted by name. */
export function calledFunctions(reports: readonly FoundReport[]): CalledFunction[] {
  const byName = new Map<string, CalledFunction>();
  const entry = (functionName: string): CalledFunction => {
    let called = byName.get(functionName);
    if (!called) {
      called = {
        ...nameFunction(functionName),
        stable: 0,
        canary: 0,
        callers: [],
      };
      byName.set(functionName, called);
    }
    return called;
  };
  for (const { prefix, report } of reports) {
    const stable = entry(report.functionName);
    stable.stable++;
    stable.callers.push({ instanceId: report.instanceId, prefix, canary: false });
    if (report.canary) {
      const canary = entry(report.canary.functionName);
      canary.canary++;
      canary.callers.push({ instanceId: report.instanceId, prefix, canary: true });
    }
  }
  return [...byName.values()].sort((a, b) => a.functionName.localeCompare(b.functionName));
}

/** `web-1 (prefix rl:), web-2 (canary, prefix rl:)`, the first few and a count of the rest. */
export function describeCallers(callers: readonly Caller[]): string {
  return listSome(
    callers.map(({ instanceId, prefix, canary }) => `${instanceId} (${canary ? 'canary, ' : ''}prefix ${prefix})`),
  );
}
