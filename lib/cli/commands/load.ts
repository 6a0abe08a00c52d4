import { isFunctionNameTaken, isLibraryAlreadyExists, messageOf } from '../../redis/reply';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { librariesOf } from '../../redis/loaded-libraries';
import { bundledSource } from '../libraries';
import { onEveryMaster, resultTable } from '../on-every-master';
import { requireBundledVersion } from '../version-arg';

/** `functions load <version>`: loads the bundled library where missing; other code stays unless `--replace`. */
export const loadCommand: Command = async ({ options, masters, suggest }) => {
  const contract = requireBundledVersion(options.args[0]);
  const source = bundledSource(contract);

  const nodes = await onEveryMaster(masters, async (node) => {
    const [current] = await librariesOf(node, contract.libraryName);
    if (current?.code === source) return 'unchanged';
    if (current && !options.replace) return 'different';
    try {
      await (current ? node.call('FUNCTION', 'LOAD', 'REPLACE', source) : node.call('FUNCTION', 'LOAD', source));
    } catch (error) {
      if (isFunctionNameTaken(error))
        throw new Error(`${messageOf(error)}: another library registers that name; see functions list`, {
          cause: error,
        });
      // Another process loaded the library between our LIST and LOAD.
      if (!isLibraryAlreadyExists(error)) throw error;
      const [raced] = await librariesOf(node, contract.libraryName);
      return raced?.code === source ? 'unchanged' : 'different';
    }
    return current ? 'replaced' : 'loaded';
  });

  const different = nodes.filter((n) => n.result === 'different');
  const failed = nodes.filter((n) => n.result === 'failed');
  const ok = different.length === 0 && failed.length === 0;
  const notes: string[] = [];
  if (different.length > 0) {
    notes.push(
      `${contract.libraryName} on ${different.map((n) => n.node).join(', ')} has other code than the bundled ${contract.version}; nothing was changed there. ` +
        `Replacing it changes what its callers run at once; if that is intended: ${suggest(`functions load ${contract.version} --replace`)}`,
    );
  }
  for (const { node, error } of failed) notes.push(`${node} refused FUNCTION LOAD: ${error}`);

  const text =
    resultTable(nodes) +
    (ok
      ? `${contract.libraryName} (${contract.version}) is loaded on every master.\n`
      : notes.map((note) => `${note}\n`).join(''));
  return {
    exitCode: ok ? ExitCode.Ok : ExitCode.Failed,
    json: { version: contract.version, library: contract.libraryName, replace: options.replace, nodes },
    text,
    error: ok ? undefined : `${contract.libraryName} is not loaded with the bundled code on every master`,
  };
};
