import type { Redis } from 'ioredis';
import { librariesOf } from '../../redis/loaded-libraries';
import { FUNCTION_VERSIONS } from '../../redis/function-versions';
import { nodeAddress } from '../../redis/redis-nodes';
import { readInstanceReports } from '../instance-reports';

/** Why an override just stored may not apply yet: masters and live limiters under `keyPrefix` that read none. */
export async function overrideReaderWarnings(
  masters: readonly Redis[],
  keyPrefix: string,
  suggest: (command: string) => string,
): Promise<string[]> {
  const readers = FUNCTION_VERSIONS.filter((contract) => contract.full);
  const libraries = new Set(readers.map((contract) => contract.libraryName));
  const functions = new Set(readers.map((contract) => contract.allowFunction));
  const named = [...functions].join(', ');
  const latest = readers[readers.length - 1];
  const [loaded, { reports }] = await Promise.all([
    Promise.all(
      masters.map(async (node) => ({ node, names: (await librariesOf(node, undefined, false)).map((l) => l.name) })),
    ),
    readInstanceReports(masters, keyPrefix),
  ]);
  const warnings: string[] = [];
  for (const { node, names } of loaded) {
    if (names.some((name) => libraries.has(name))) continue;
    warnings.push(
      `${nodeAddress(node)} has no ${[...libraries].join(', ')}: the override is stored, but only ${named} reads overrides; ` +
        `limiters load it at start-up (loadFunctions 'auto'), or run: ${suggest(`functions load ${latest.version}`)}`,
    );
  }
  for (const { report } of reports) {
    if (functions.has(report.functionName)) continue;
    const canary = report.canary && functions.has(report.canary.functionName) ? report.canary : undefined;
    warnings.push(
      `live instance ${report.instanceId} (key prefix "${keyPrefix}") calls ${report.functionName}, which reads no overrides` +
        (canary ? ` (only its ${canary.percent}% canary share on ${canary.functionName} does)` : '') +
        `: the override applies to its decisions once it runs ${named}`,
    );
  }
  return warnings;
}
