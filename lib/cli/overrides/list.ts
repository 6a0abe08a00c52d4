import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { plural } from '../format';
import { overridesOf } from './overrides-of';
import { overridesTable } from './override-table';

/** `overrides list`: the overrides under the key prefix matching `--match`, sorted by key, at most `--count`. */
export const overridesListCommand: Command = async (context) => {
  const { store, keyPrefix, scope: prefixed } = overridesOf(context);
  const count = context.options.overrides.count as number;
  const match = context.options.overrides.match ?? '*';
  const overrides = await store.list({ match, count });
  // A full page may hide more: say so rather than let it pass for all of them.
  const truncated = overrides.length === count;
  const scope = `${prefixed}${match === '*' ? '' : ` matching "${match}"`}`;
  let text =
    overrides.length === 0 ? `No overrides ${scope}.\n` : `${plural(overrides.length, 'override')} ${scope}:\n`;
  if (overrides.length > 0) text += overridesTable(overrides);
  if (truncated) text += `Stopped at --count ${count}: there may be more (raise --count, or narrow --match).\n`;
  return { exitCode: ExitCode.Ok, json: { keyPrefix, match, count, truncated, overrides }, text };
};
