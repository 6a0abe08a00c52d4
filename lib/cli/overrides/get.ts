import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { overridesOf } from './overrides-of';
import { overridesTable } from './override-table';

/** `overrides get <key>`: the override of one limited key, or none (exit code 0 either way). */
export const overridesGetCommand: Command = async (context) => {
  const { store, keyPrefix, key, scope } = overridesOf(context);
  const stored = await store.get(key);
  return {
    exitCode: ExitCode.Ok,
    json: { keyPrefix, key, override: stored ?? null },
    text: stored ? overridesTable([stored]) : `No override of ${key} ${scope}: its rules apply.\n`,
  };
};
