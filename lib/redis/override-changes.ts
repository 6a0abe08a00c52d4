import { ReplyError, type Redis } from 'ioredis';
import type { OverrideChangeListener } from '../core/limiter-backend';

/**
 * The channel every override store publishes a change on, its message the limited key with its prefix:
 * the limiters drop their cached refusals of it.
 */
export const OVERRIDE_CHANGES_CHANNEL = 'sliding-limit:override-changes';

/**
 * Subscribes to override changes on a duplicate of `client`, telling `listener` each change and whether
 * changes reach it: `watching(true)` once subscribed, `watching(false)` whenever the connection drops,
 * where a change may be lost. Returns the function that stops it. The connection never keeps the
 * process alive.
 */
export function watchOverrideChanges(client: Redis, listener: OverrideChangeListener): () => void {
  const subscriber = client.duplicate({ autoResubscribe: false, autoResendUnfulfilledCommands: false });
  subscriber.on('error', () => undefined); // the limiter's own connection reports Redis errors
  subscriber.on('connect', () => subscriber.stream.unref());
  subscriber.on('ready', () => {
    subscriber.subscribe(OVERRIDE_CHANGES_CHANNEL).then(
      () => listener.watching(true),
      // Refused (an ACL without the channel): the cache keeps no refusal rather than ask again and again.
      (error: unknown) => error instanceof ReplyError && subscriber.disconnect(),
    );
  });
  subscriber.on('message', (channel: string, key: string) => {
    if (channel === OVERRIDE_CHANGES_CHANNEL) listener.changed(key);
  });
  subscriber.on('close', () => listener.watching(false));
  return () => subscriber.disconnect();
}
