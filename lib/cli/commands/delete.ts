import type { Command } from '../command';
import { CliError, ExitCode } from '../exit-codes';
import { formatTable, plural } from '../format';
import { readInstanceReports } from '../instance-reports';
import { functionNamesOf } from '../../redis/function-versions';
import { librariesOf } from '../../redis/loaded-libraries';
import { isLibraryNotFound } from '../../redis/reply';
import { failureOf, onEveryMaster, resultTable } from '../on-every-master';
import { requireLibraryArgument } from '../version-arg';

interface Caller {
  instanceId: string;
  host: string;
  pid: number;
  prefix: string;
  functionName: string;
  /** Whether it calls the function as its stable function or sends it a canary share. */
  as: 'functionName' | 'canary';
}

/** `functions delete <version>`: FUNCTION DELETE on every master; refused while live instances call it. */
export const deleteCommand: Command = async ({ options, masters, suggest }) => {
  const { library, contract } = requireLibraryArgument(options.args[0]);

  const present = await Promise.all(masters.map(async (node) => (await librariesOf(node, library))[0]));
  const holders = masters.filter((_, i) => present[i] !== undefined);
  if (holders.length === 0 && !contract) {
    throw new CliError(
      ExitCode.Failed,
      `no library named ${library} on any master; ${suggest('functions list')} shows what is loaded`,
    );
  }
  const functionNames = new Set([
    ...(contract ? functionNamesOf(contract) : []),
    ...present.flatMap((lib) => lib?.functions ?? []),
  ]);

  const { reports } = await readInstanceReports(masters, options.prefix);
  const callers: Caller[] = [];
  for (const { prefix, report } of reports) {
    const base = { instanceId: report.instanceId, host: report.host, pid: report.pid, prefix };
    if (functionNames.has(report.functionName))
      callers.push({ ...base, functionName: report.functionName, as: 'functionName' });
    if (report.canary && functionNames.has(report.canary.functionName))
      callers.push({ ...base, functionName: report.canary.functionName, as: 'canary' });
  }
  const callerLines = formatTable(
    callers.map((c) => [
      c.instanceId,
      `host ${c.host} pid ${c.pid}`,
      `prefix ${c.prefix}`,
      c.as === 'canary' ? `canary → ${c.functionName}` : `calls ${c.functionName}`,
    ]),
    '  - ',
  );
  const json = { library, version: contract?.version ?? null, force: options.force, callers };

  if (callers.length > 0 && !options.force) {
    const instances = [...new Set(callers.map((c) => c.instanceId))];
    return {
      exitCode: ExitCode.Failed,
      json: { ...json, refused: true, nodes: [] },
      text:
        `Refused: ${plural(instances.length, 'live instance')} still ${instances.length === 1 ? 'calls' : 'call'} ${library}:\n${callerLines}` +
        `Switch them first (functionName / canary option, or limiter.use(...)), then wait until\n` +
        `  ${suggest('functions status')}\n` +
        `shows no caller (a report expires three report intervals after the last one) and delete again.\n` +
        `--force deletes anyway: those instances then fail with "Function not found", or load it back\n` +
        `if they run loadFunctions: 'auto'.\n`,
      error: `${library} is in use by ${instances.join(', ')}; not deleted`,
    };
  }

  const nodes = await onEveryMaster(masters, async (node) => {
    try {
      await node.call('FUNCTION', 'DELETE', library);
      return 'deleted';
    } catch (error) {
      if (isLibraryNotFound(error)) return 'absent';
      throw error;
    }
  });
  const error = failureOf('FUNCTION DELETE', nodes);
  let text = resultTable(nodes);
  if (callers.length > 0)
    text += `Deleted with --force while ${plural(callers.length, 'caller')} remained:\n${callerLines}`;
  if (!error) {
    text += nodes.some((n) => n.result === 'deleted')
      ? `${library} is deleted on every master.\n`
      : `${library} was not loaded on any master; nothing to delete.\n`;
  }
  return { exitCode: error ? ExitCode.Failed : ExitCode.Ok, json: { ...json, refused: false, nodes }, text, error };
};
