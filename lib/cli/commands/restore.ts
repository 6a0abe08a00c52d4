import { resolve } from 'node:path';
import type { Redis } from 'ioredis';
import { isUnanswered } from '../../redis/error-kind';
import { nodeAddress } from '../../redis/redis-nodes';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { readDumpFile } from '../dump-file';
import { formatTable } from '../format';
import { librariesOf } from '../../redis/loaded-libraries';

const POLICY_HINTS: Record<string, string> = {
  append:
    'APPEND refuses libraries that exist already; --policy replace overwrites them, --policy flush makes each master hold exactly the dump',
  replace: '',
  flush: '',
};

/**
 * `functions restore <file> --policy append|replace|flush`: FUNCTION RESTORE on every master.
 * `append` (the default, Redis' own) fails on a library that exists; `replace` overwrites
 * libraries of the same name; `flush` first deletes every library, including those not in the dump.
 */
export const restoreCommand: Command = async ({ options, masters }) => {
  const payload = readDumpFile(options.args[0]);
  const policy = options.policy.toUpperCase();

  const restoreOn = async (
    node: Redis,
  ): Promise<{ node: string; result: 'restored' | 'failed'; error?: string; libraries: string[] }> => {
    const address = nodeAddress(node);
    let error: string | undefined;
    try {
      await node.call('FUNCTION', 'RESTORE', payload, policy);
    } catch (cause) {
      if (isUnanswered(cause)) throw cause;
      error = (cause as Error).message;
    }
    const libraries = (await librariesOf(node)).map((library) => library.name);
    return error === undefined
      ? { node: address, result: 'restored', libraries }
      : { node: address, result: 'failed', error, libraries };
  };
  const nodes = await Promise.all(masters.map(restoreOn));
  const failed = nodes.filter((n) => n.result === 'failed');

  let text = formatTable(
    nodes.map((n) => [n.node, n.result, n.error ?? `now holds: ${n.libraries.join(', ') || 'no libraries'}`]),
  );
  if (failed.length > 0 && POLICY_HINTS[options.policy]) text += `${POLICY_HINTS[options.policy]}.\n`;
  return {
    exitCode: failed.length === 0 ? ExitCode.Ok : ExitCode.Failed,
    json: { file: resolve(options.args[0]), bytes: payload.length, policy: options.policy, nodes },
    text,
    error: failed.length === 0 ? undefined : `FUNCTION RESTORE failed on ${failed.map((n) => n.node).join(', ')}`,
  };
};
