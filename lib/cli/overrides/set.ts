import { overrideKeyOf } from '../../core/override-keys';
import { RedisOverridesStore } from '../../redis/overrides-store';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import type { KeyOverride } from '../../core/key-overrides';
import { overrideReaderWarnings } from './override-readers';
import { overridesTable } from './override-table';

/**
 * `overrides set <key>`: stores the override of one limited key, in the key's cluster slot, where
 * `sliding_allow_v2` reads it on the key's next decision; warns when a master or a live limiter
 * would not read it yet.
 */
export const overridesSetCommand: Command = async ({ options, connection, masters, suggest }) => {
  const { keyPrefix, args, overrides } = options;
  const [key] = args;
  const stored = await new RedisOverridesStore(connection, { keyPrefix }).set(key, overrides.override as KeyOverride, {
    ttlMs: overrides.ttlMs,
    note: overrides.note,
    by: overrides.by,
  });
  const warnings = await overrideReaderWarnings(masters, keyPrefix, suggest);
  const redisKey = overrideKeyOf(keyPrefix + key) as string;
  return {
    exitCode: ExitCode.Ok,
    json: { keyPrefix, redisKey, override: stored, warnings },
    text: `Set the override of ${key} under key prefix "${keyPrefix}" (Redis key ${redisKey}):\n${overridesTable([stored])}`,
    warnings,
  };
};
