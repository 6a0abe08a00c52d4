/**
 * Redis' glob matching (`stringmatchlen`, what KEYS and SCAN MATCH use): `*` any run, `?` any one
 * character, `[abc]`, `[^abc]` and `[a-z]` classes, `\` escaping the next character.
 */
export function globMatches(pattern: string, text: string): boolean {
  return globToRegExp(pattern).test(text);
}

function globToRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const character = pattern[i];
    if (character === '*') source += '[\\s\\S]*';
    else if (character === '?') source += '[\\s\\S]';
    else if (character === '\\' && i + 1 < pattern.length) source += escapeRegExp(pattern[++i]);
    else if (character === '[') {
      const end = classEnd(pattern, i);
      source += classOf(pattern.slice(i + 1, end));
      i = end;
    } else source += escapeRegExp(character);
  }
  return new RegExp(`^${source}$`);
}

/** The index of the `]` closing the class opened at `open` (the pattern's end when none closes it). */
function classEnd(pattern: string, open: number): number {
  for (let i = open + 1; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === ']' && i > open + 1) return i;
  }
  return pattern.length;
}

/** A character class's body (between the brackets) as a RegExp class. */
function classOf(body: string): string {
  const negated = body.startsWith('^');
  let members = '';
  for (let i = negated ? 1 : 0; i < body.length; i++) {
    if (body[i] === '\\' && i + 1 < body.length) members += escapeClass(body[++i]);
    else if (body[i + 1] === '-' && i + 2 < body.length) {
      const [from, to] = [body[i], body[i + 2]].sort();
      members += `${escapeClass(from)}-${escapeClass(to)}`;
      i += 2;
    } else members += escapeClass(body[i]);
  }
  return members === '' ? (negated ? '[\\s\\S]' : '(?!)') : `[${negated ? '^' : ''}${members}]`;
}

function escapeRegExp(character: string): string {
  return character.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function escapeClass(character: string): string {
  return character.replace(/[\]\\^-]/g, '\\$&');
}
