import { RedisOverridesStore } from '../../redis/overrides-store';
import type { CommandContext } from '../command';

/** What an `overrides` command works on: the store under `--key-prefix`, and the `<key>` it names. */
export function overridesOf({ options, connection }: CommandContext) {
  const { keyPrefix } = options;
  const store = new RedisOverridesStore(connection, { keyPrefix });
  return { store, keyPrefix, key: options.args[0], scope: `under key prefix "${keyPrefix}"` };
}
