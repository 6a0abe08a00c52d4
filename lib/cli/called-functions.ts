import { listSome } from './format';
import type { FoundReport } from './instance-reports';
import { functionEntries, type NamedFunction } from './libraries';

interface Caller {
  instanceId: string;
  prefix: string;
  /** Whether it sends the function a canary share rather than all its calls. */
  canary: boolean;
}

export interface CalledFunction extends NamedFunction {
  stable: number;
  canary: number;
  callers: Caller[];
}

/** The function names the reports name, stable and canary, sorted by name. */
export function calledFunctions(reports: readonly FoundReport[]): CalledFunction[] {
  const entries = functionEntries<CalledFunction>((named) => ({ ...named, stable: 0, canary: 0, callers: [] }));
  for (const { prefix, report } of reports) {
    const stable = entries.of(report.functionName);
    stable.stable++;
    stable.callers.push({ instanceId: report.instanceId, prefix, canary: false });
    if (report.canary) {
      const canary = entries.of(report.canary.functionName);
      canary.canary++;
      canary.callers.push({ instanceId: report.instanceId, prefix, canary: true });
    }
  }
  return entries.sorted();
}

/** `web-1 (prefix rl:), web-2 (canary, prefix rl:)`, the first few and a count of the rest. */
export function describeCallers(callers: readonly Caller[]): string {
  return listSome(
    callers.map(({ instanceId, prefix, canary }) => `${instanceId} (${canary ? 'canary, ' : ''}prefix ${prefix})`),
  );
}
