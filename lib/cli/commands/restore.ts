import { resolve } from 'node:path';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { readDumpFile } from '../dump-file';
import { formatTable } from '../format';
import { librariesOf } from '../../redis/loaded-libraries';
import { failureOf, onEveryMaster } from '../on-every-master';

const APPEND_HINT =
  'APPEND refuses libraries that exist already; --policy replace overwrites them, --policy flush makes each master hold exactly the dump.\n';

/** `functions restore <file> --policy append|replace|flush`: FUNCTION RESTORE on every master. */
export const restoreCommand: Command = async ({ options, masters }) => {
  const payload = readDumpFile(options.args[0]);
  const restored = await onEveryMaster(masters, async (node) => {
    await node.call('FUNCTION', 'RESTORE', payload, options.policy.toUpperCase());
    return 'restored';
  });
  const held = await Promise.all(masters.map(async (node) => (await librariesOf(node)).map((library) => library.name)));
  const nodes = restored.map((n, i) => ({ ...n, libraries: held[i] }));
  const error = failureOf('FUNCTION RESTORE', nodes);

  let text = formatTable(
    nodes.map((n) => [n.node, n.result, n.error ?? `now holds: ${n.libraries.join(', ') || 'no libraries'}`]),
  );
  if (error && options.policy === 'append') text += APPEND_HINT;
  return {
    exitCode: error ? ExitCode.Failed : ExitCode.Ok,
    json: { file: resolve(options.args[0]), bytes: payload.length, policy: options.policy, nodes },
    text,
    error,
  };
};
