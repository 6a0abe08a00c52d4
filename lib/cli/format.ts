/** Lays rows out as aligned columns (the last column is not padded). */
export function formatTable(rows: readonly (readonly string[])[], indent = '  '): string {
  if (rows.length === 0) return '';
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map(
      (row) =>
        indent +
        row
          .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i])))
          .join('  ')
          .trimEnd() +
        '\n',
    )
    .join('');
}

/** A ratio as a percentage with one decimal, or `-` when there is nothing to divide. */
export function formatRate(rate: number | null): string {
  return rate === null ? '-' : `${(rate * 100).toFixed(1)}%`;
}

export function rateOf(part: number, whole: number): number | null {
  return whole > 0 ? part / whole : null;
}

/** How long ago an ISO timestamp was, e.g. `4s ago`. */
export function formatAge(iso: string, nowMs = Date.now()): string {
  const seconds = Math.max(0, Math.round((nowMs - Date.parse(iso)) / 1000));
  if (seconds < 120) return `${seconds}s ago`;
  const minutes = Math.round(seconds / 60);
  return minutes < 120 ? `${minutes}m ago` : `${Math.round(minutes / 60)}h ago`;
}

export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** `a, b, c, d, e and 3 more`: the first `shown` items of a list that may be long, and a count of the rest. */
export function listSome(items: readonly string[], shown = 5): string {
  const rest = items.length - shown;
  return rest > 0 ? `${items.slice(0, shown).join(', ')} and ${rest} more` : items.join(', ');
}

/** A duration for people: `850ms`, `42s`, `14m 5s`, `6d 23h` (the two largest units, rounded down). */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.floor(ms))}ms`;
  const first = DURATION_UNITS.findIndex(([, size]) => ms >= size);
  const [unit, size] = DURATION_UNITS[first];
  const next = DURATION_UNITS[first + 1];
  const smaller = next ? Math.floor((ms % size) / next[1]) : 0;
  return `${Math.floor(ms / size)}${unit}${smaller > 0 ? ` ${smaller}${next[0]}` : ''}`;
}

/** Ms per unit of the durations the CLI prints and reads (`--ttl 15m`). */
export const DURATION_UNIT_MS: Readonly<Record<string, number>> = {
  d: 86_400_000,
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
};

/** The units formatDuration writes, largest first (below a second it writes ms alone). */
const DURATION_UNITS = Object.entries(DURATION_UNIT_MS).filter(([unit]) => unit !== 'ms');
