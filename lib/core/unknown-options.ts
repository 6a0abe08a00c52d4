/**
 * Names the keys of an options object that are not options, each with the option probably meant.
 * @param known the options' names
 * @param label where the object sits (`@SlidingLimit`, `defaultLimit`); none for top-level options
 * @param aliases other libraries' names for an option, lowercase (`ttl` → `windowMs`, as
 *   `@nestjs/throttler` calls it), with what to write instead
 */
export function describeUnknownOptions(
  value: object,
  known: readonly string[],
  label?: string,
  aliases: Readonly<Record<string, string>> = {},
): string[] {
  const problems: string[] = [];
  for (const name of Object.keys(value)) {
    if (known.includes(name)) continue;
    const meant = aliases[name.toLowerCase()] ?? closestName(name, known);
    const unknown = label === undefined ? `unknown option ${name}` : `${label} has an unknown option ${name}`;
    problems.push(meant ? `${unknown}; did you mean ${meant}?` : `${unknown}; known options: ${known.join(', ')}`);
  }
  return problems;
}

/** The known name in another case, else the nearest one within two edits (and under half the name). */
function closestName(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const sameLetters = known.find((candidate) => candidate.toLowerCase() === lower);
  if (sameLetters) return sameLetters;
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance <= 2 && distance * 2 < name.length && (!best || distance < best.distance))
      best = { name: candidate, distance };
  }
  return best?.name;
}

/** Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      rows[i][j] = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        rows[i][j] = Math.min(rows[i][j], rows[i - 2][j - 2] + 1);
    }
  }
  return rows[a.length][b.length];
}
