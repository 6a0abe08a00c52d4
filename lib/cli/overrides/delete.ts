import { RedisOverridesStore } from '../../redis/overrides-store';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';

/** `overrides delete <key>`: deletes the override of one limited key; the next decision goes by the rule. */
export const overridesDeleteCommand: Command = async ({ options, connection }) => {
  const { keyPrefix, args } = options;
  const [key] = args;
  const deleted = await new RedisOverridesStore(connection, { keyPrefix }).delete(key);
  return {
    exitCode: ExitCode.Ok,
    json: { keyPrefix, key, deleted },
    text: deleted
      ? `Deleted the override of ${key} under key prefix "${keyPrefix}": its next request goes by the rule.\n`
      : `No override of ${key} under key prefix "${keyPrefix}": nothing to delete.\n`,
  };
};
