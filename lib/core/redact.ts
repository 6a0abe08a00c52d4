/*
 * Passwords reach the package inside URLs (`redis://user:pass@host`) and inside ioredis errors (the
 * AUTH command's arguments). Every message the package builds from such a value, and every line the
 * CLI prints, goes through these functions, so a password never reaches an error message or a log.
 */
const URL_USERINFO = /(\b[a-z][a-z0-9+.-]*:\/\/|^)([^\s/@]*)@/gi;

/** A URL with its password (or a user-only secret) replaced by `***`, whatever its scheme. */
export function redactUrl(url: string): string {
  return url.replace(URL_USERINFO, (_match, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    if (colon < 0) return `${scheme}***@`;
    return `${scheme}${userinfo.slice(0, colon)}:***@`;
  });
}

/** Commands whose arguments carry credentials. */
const SECRET_COMMANDS = new Set(['auth', 'hello', 'migrate']);

/**
 * Removes credentials from an error ioredis produced: the arguments of an AUTH or HELLO it carries
 * (WRONGPASS errors do), and URLs in its message. Mutates and returns the error.
 */
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
