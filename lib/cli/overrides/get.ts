import { RedisOverridesStore } from '../../redis/overrides-store';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { overridesTable } from './override-table';

/** `overrides get <key>`: the override of one limited key, or none (exit code 0 either way). */
export const overridesGetCommand: Command = async ({ options, connection }) => {
  const { keyPrefix, args } = options;
  const [key] = args;
  const stored = await new RedisOverridesStore(connection, { keyPrefix }).get(key);
  return {
    exitCode: ExitCode.Ok,
    json: { keyPrefix, key, override: stored ?? null },
    text: stored
      ? overridesTable([stored])
      : `No override of ${key} under key prefix "${keyPrefix}": its rules apply.\n`,
  };
};
