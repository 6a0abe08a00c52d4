import { overrideKeyOf } from '../../core/override-keys';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import type { KeyOverride } from '../../core/key-overrides';
import { overrideReaderWarnings } from './override-readers';
import { overridesOf } from './overrides-of';
import { overridesTable } from './override-table';

/** `overrides set <key>`: stores one key's override in its slot; warns where it would not be read yet. */
export const overridesSetCommand: Command = async (context) => {
  const { store, keyPrefix, key, scope } = overridesOf(context);
  const { override, ttlMs, note, by } = context.options.overrides;
  const stored = await store.set(key, override as KeyOverride, { ttlMs, note, by });
  const warnings = await overrideReaderWarnings(context.masters, keyPrefix, context.suggest);
  const redisKey = overrideKeyOf(keyPrefix + key) as string;
  return {
    exitCode: ExitCode.Ok,
    json: { keyPrefix, redisKey, override: stored, warnings },
    text: `Set the override of ${key} ${scope} (Redis key ${redisKey}):\n${overridesTable([stored])}`,
    warnings,
  };
};
