import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { overridesOf } from './overrides-of';

/** `overrides delete <key>`: deletes the override of one limited key; the next decision goes by the rule. */
export const overridesDeleteCommand: Command = async (context) => {
  const { store, keyPrefix, key, scope } = overridesOf(context);
  const deleted = await store.delete(key);
  return {
    exitCode: ExitCode.Ok,
    json: { keyPrefix, key, deleted },
    text: deleted
      ? `Deleted the override of ${key} ${scope}: its next request goes by the rule.\n`
      : `No override of ${key} ${scope}: nothing to delete.\n`,
  };
};
