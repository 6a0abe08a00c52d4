import type { Redis } from 'ioredis';
import { isUnanswered } from '../../redis/error-kind';
import { nodeAddress } from '../../redis/redis-nodes';
import { isFunctionNameTaken, isLibraryAlreadyExists } from '../../redis/reply';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { formatTable } from '../format';
import { librariesOf } from '../../redis/loaded-libraries';
import { bundledSource } from '../libraries';
import { requireBundledVersion } from '../version-arg';

/** What `load` did on one master. */
export type LoadResult =
  /** The library was missing and is now loaded. */
  | 'loaded'
  /** Other code was loaded under the name; --replace put the bundled code in its place. */
  | 'replaced'
  /** The bundled code was already loaded; nothing was sent. */
  | 'unchanged'
  /** Other code is loaded under the name and --replace was not given; nothing was changed. */
  | 'different'
  /** Redis refused the load (e.g. a function name registered by another library). */
  | 'failed';

/**
 * `functions load <version>`: loads the bundled library on every master where it is missing.
 * Never REPLACE unless `--replace`: a library of that name with other code may be what live
 * instances run, and replacing it changes their behaviour at once.
 */
export const loadCommand: Command = async ({ options, masters, suggest }) => {
  const contract = requireBundledVersion(options.args[0]);
  const source = bundledSource(contract);

  const loadOn = async (node: Redis): Promise<{ node: string; result: LoadResult; error?: string }> => {
    const address = nodeAddress(node);
    try {
      const [current] = await librariesOf(node, contract.libraryName);
      if (current?.code === source) return { node: address, result: 'unchanged' };
      if (current && !options.replace) return { node: address, result: 'different' };
      try {
        await (current ? node.call('FUNCTION', 'LOAD', 'REPLACE', source) : node.call('FUNCTION', 'LOAD', source));
      } catch (error) {
        if (isFunctionNameTaken(error))
          throw new Error(`${(error as Error).message}: another library registers that name; see functions list`, {
            cause: error,
          });
        // Another process loaded the library between our LIST and LOAD.
        if (!isLibraryAlreadyExists(error)) throw error;
        const [raced] = await librariesOf(node, contract.libraryName);
        return { node: address, result: raced?.code === source ? 'unchanged' : 'different' };
      }
      return { node: address, result: current ? 'replaced' : 'loaded' };
    } catch (error) {
      if (isUnanswered(error)) throw error;
      return { node: address, result: 'failed', error: (error as Error).message };
    }
  };
  const nodes = await Promise.all(masters.map(loadOn));

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
    formatTable(nodes.map((n) => [n.node, n.result, n.error ?? ''])) +
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
