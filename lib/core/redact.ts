// Passwords come in URLs and in ioredis errors (AUTH's arguments): every message from them goes through these.
const URL_USERINFO = /(\b[a-z][a-z0-9+.-]*:\/\/|^)([^\s/@]*)@/gi;

/** A URL with its password (or a user-only secret) replaced by `***`, whatever its scheme. */
export function redactUrl(url: string): string {
  return url.replace(URL_USERINFO, (_match, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    if (colon < 0) return `${scheme}***@`;
    return `${scheme}${userinfo.slice(0, colon)}:***@`;
  });
}

const SECRET_COMMANDS = new Set(['auth', 'hello', 'migrate']);

/** Removes credentials from an ioredis error (AUTH or HELLO arguments, URLs in its message); mutates it. */
export function scrubSecrets<T>(error: T): T {
  if (typeof error !== 'object' || error === null) return error;
  const command = (error as { command?: { name?: unknown; args?: unknown } }).command;
  if (
    command &&
    typeof command.name === 'string' &&
    SECRET_COMMANDS.has(command.name.toLowerCase()) &&
    Array.isArray(command.args)
  ) {
    command.args = command.args.map(() => '***');
  }
  if (error instanceof Error) error.message = redactUrl(error.message);
  return error;
}

/** Redacts URLs in a text, and every literal occurrence of the given secrets. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let redacted = redactUrl(text);
  for (const secret of secrets) {
    // Very short secrets would turn ordinary words into ***; they are still redacted inside URLs.
    if (secret.length >= 4) redacted = redacted.split(secret).join('***');
  }
  return redacted;
}
