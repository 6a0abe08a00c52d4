import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { nodeAddress } from '../../redis/redis-nodes';
import type { Command } from '../command';
import { CliError, ExitCode } from '../exit-codes';
import { librariesOf } from '../../redis/loaded-libraries';

/** `functions dump <file>`: FUNCTION DUMP to a file, as bytes; the masters must hold the same libraries. */
export const dumpCommand: Command = async ({ options, masters, suggest }) => {
  const file = resolve(options.args[0]);
  const libraries = await Promise.all(masters.map((node) => librariesOf(node)));
  const signature = (index: number) => JSON.stringify(libraries[index].map((library) => [library.name, library.code]));
  const differing = masters.filter((_, i) => signature(i) !== signature(0));
  if (differing.length > 0) {
    throw new CliError(
      ExitCode.Failed,
      `the masters hold different libraries (${nodeAddress(masters[0])} vs ${differing.map(nodeAddress).join(', ')}), so no single dump restores them all; ` +
        `see ${suggest('functions list')} and make them agree first. Nothing was written.`,
    );
  }

  const source = masters[0];
  const payload = await source.callBuffer('FUNCTION', 'DUMP');
  if (!Buffer.isBuffer(payload))
    throw new CliError(ExitCode.Failed, `FUNCTION DUMP on ${nodeAddress(source)} did not return a binary payload`);
  // Written next to the target and renamed, so an interrupted dump never leaves half a file under the name.
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, payload);
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new CliError(ExitCode.Failed, `cannot write ${file}: ${(error as Error).message}`, { cause: error });
  }

  const names = libraries[0].map((library) => library.name);
  return {
    exitCode: ExitCode.Ok,
    json: { file, bytes: payload.length, node: nodeAddress(source), libraries: names },
    text:
      `Wrote ${payload.length} bytes to ${file}: ${names.length === 0 ? 'no libraries (an empty dump)' : names.join(', ')}, from ${nodeAddress(source)}.\n` +
      `Restore with: ${suggest(`functions restore ${options.args[0]} --policy append`)}\n`,
  };
};
