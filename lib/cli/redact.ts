/*
 * Passwords reach the CLI inside URLs (`redis://user:pass@host`). Every line the CLI prints goes
 * through redactSecrets, so neither our messages nor an error text quoting a URL can leak one.
 */
const URL_USERINFO = /\b(rediss?:\/\/)([^\s/@]*)@/gi;

/** A Redis URL with its password (or a user-only secret) replaced by `***`. */
export function redactUrl(url: string): string {
  return url.replace(URL_USERINFO, (_match, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    if (colon < 0) return `${scheme}***@`;
    return `${scheme}${userinfo.slice(0, colon)}:***@`;
  });
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
