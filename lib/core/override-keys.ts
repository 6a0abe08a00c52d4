/*
 * Where a limited key's override lives: a key of its own in the limited key's cluster hash slot, so
 * that rate_limit_v2 reads it in the same call as the key (no extra round trip, no CROSSSLOT).
 *
 *   a key with a hash tag     rl:login:{ip:10.0.0.1}   →  rl:login:{ip:10.0.0.1}|override
 *   a key without braces      rl:global                →  {rl:global}|override-wrapped
 *   braces but no valid tag   rl:a{}b, rl:a}b          →  none: such a key cannot carry overrides
 *
 * The two suffixes keep `{x}` and `x`, which hash alike, from sharing an override.
 */

/** Suffix of the override key of a key with a cluster hash tag. */
export const OVERRIDE_SUFFIX = '|override';
/** Suffix of the override key of a key without braces, wrapped in a tag of its own. */
export const WRAPPED_OVERRIDE_SUFFIX = '|override-wrapped';

/**
 * Whether a key has a cluster hash tag: {@link hashTagOf} without cutting the tag out, since v2's
 * contract asks it of each limit key up to three times per decision (the key count, the keys, the flags).
 */
function hasHashTag(key: string): boolean {
  const open = key.indexOf('{');
  if (open === -1) return false;
  const close = key.indexOf('}', open + 1);
  return close !== -1 && close !== open + 1;
}

/** Whether a key can carry an override key: it has a hash tag, or no brace at all (see the table above). */
export function canCarryOverride(key: string): boolean {
  return hasHashTag(key) || (!key.includes('{') && !key.includes('}'));
}

/** The cluster hash tag of a key (what Redis Cluster hashes), or undefined when it hashes whole. */
export function hashTagOf(key: string): string | undefined {
  if (!hasHashTag(key)) return undefined;
  const open = key.indexOf('{');
  return key.slice(open + 1, key.indexOf('}', open + 1));
}

/** The override key of a full limited key (prefix included), or undefined when it cannot carry one. */
export function overrideKeyOf(key: string): string | undefined {
  if (hasHashTag(key)) return key + OVERRIDE_SUFFIX;
  if (!key.includes('{') && !key.includes('}')) return `{${key}}${WRAPPED_OVERRIDE_SUFFIX}`;
  return undefined;
}

/** Why a key cannot carry overrides, for error messages; undefined when it can. */
export function whyNoOverrideKey(key: string): string | undefined {
  if (overrideKeyOf(key) !== undefined) return undefined;
  return (
    `${JSON.stringify(key)} has braces but no valid cluster hash tag ({ followed by at least one character and }), ` +
    'so no other key is sure to share its slot: use a key with a hash tag, or none with braces'
  );
}

/** The limited key whose override key this is, or undefined for a key of another kind. */
export function limitedKeyOf(overrideKey: string): string | undefined {
  if (overrideKey.endsWith(WRAPPED_OVERRIDE_SUFFIX)) {
    const wrapped = overrideKey.slice(0, -WRAPPED_OVERRIDE_SUFFIX.length);
    const key = wrapped.slice(1, -1);
    const valid = wrapped.startsWith('{') && wrapped.endsWith('}') && !/[{}]/.test(key) && key.length > 0;
    return valid ? key : undefined;
  }
  if (overrideKey.endsWith(OVERRIDE_SUFFIX)) {
    const key = overrideKey.slice(0, -OVERRIDE_SUFFIX.length);
    return hashTagOf(key) !== undefined ? key : undefined;
  }
  return undefined;
}

/** Problems of a key prefix (the limiter's rule: braces would become every key's hash tag). */
export function describeKeyPrefixProblems(keyPrefix: unknown): string[] {
  if (typeof keyPrefix === 'string' && !/[{}]/.test(keyPrefix)) return [];
  return [
    `keyPrefix must be a string without { or }, got ${typeof keyPrefix === 'string' ? JSON.stringify(keyPrefix) : typeof keyPrefix}`,
  ];
}

/** `text` with the characters of Redis' glob syntax escaped, to match itself only. */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (character) => `\\${character}`);
}

/** The SCAN MATCH patterns of the override keys of `keyPrefix` + `match` (a glob), one per form. */
export function overrideKeyPatterns(keyPrefix: string, match = '*'): string[] {
  const keys = escapeGlob(keyPrefix) + match;
  return [keys + OVERRIDE_SUFFIX, `{${keys}}${WRAPPED_OVERRIDE_SUFFIX}`];
}
