import { SlidingLimitError } from './sliding-limit.error';

/** Redis answered with a shape the contract does not allow (a server-side library that is not ours?). */
export class UnexpectedReplyError extends SlidingLimitError {
  constructor(
    readonly command: string,
    readonly reply: unknown,
  ) {
    super(`unexpected reply to ${command}: ${safeStringify(reply)}`);
  }
}

function safeStringify(value: unknown): string {
  try {
    const text = JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
    return text === undefined ? String(value) : text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return String(value);
  }
}
