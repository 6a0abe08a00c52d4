import { RedisOverridesStore } from '../../redis/overrides-store';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { plural } from '../format';
import { overridesTable } from './override-table';

/**
 * `overrides list`: the overrides of the keys under the key prefix (those matching `--match`),
 * sorted by key, at most `--count` (a SCAN of every master).
 */
export const overridesListCommand: Command = async ({ options, connection }) => {
  const { keyPrefix, overrides: args } = options;
  const count = args.count as number;
  const match = args.match ?? '*';
  const overrides = await new RedisOverridesStore(connection, { keyPrefix }).list({ match, count });
  // A full page may hide more: say so rather than let it pass for all of them.
  const truncated = overrides.length === count;
  const scope = `under key prefix "${keyPrefix}"${match === '*' ? '' : ` matching "${match}"`}`;
  let text =
    overrides.length === 0 ? `No overrides ${scope}.\n` : `${plural(overrides.length, 'override')} ${scope}:\n`;
  if (overrides.length > 0) text += overridesTable(overrides);
  if (truncated) text += `Stopped at --count ${count}: there may be more (raise --count, or narrow --match).\n`;
  return { exitCode: ExitCode.Ok, json: { keyPrefix, match, count, truncated, overrides }, text };
};
