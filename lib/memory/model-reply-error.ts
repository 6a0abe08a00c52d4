/** An error reply of the model; `message` is the reply text, as in ioredis' `ReplyError`. */
export class ModelReplyError extends Error {
  override readonly name = 'ReplyError';
}

/** Redis' reply to a command on a key of another type (a ZCOUNT of a hash, an HGETALL of a sorted set). */
export const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';
