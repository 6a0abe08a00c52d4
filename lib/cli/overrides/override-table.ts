import type { StoredOverride } from '../../core/key-overrides';
import { formatDuration, formatTable } from '../format';

/** Overrides as a table for people: key, action, limit, expires in, note, by. */
export function overridesTable(overrides: readonly StoredOverride[]): string {
  return formatTable([
    ['key', 'action', 'limit', 'expires in', 'note', 'by'],
    ...overrides.map(({ key, override, expiresInMs, note, by }) => [
      key,
      override.action,
      override.action === 'limit' ? String(override.limit) : '-',
      expiresInMs === undefined ? 'never' : formatDuration(expiresInMs),
      // One line per override, whatever the note holds.
      oneLine(note),
      oneLine(by),
    ]),
  ]);
}

function oneLine(text: string | undefined): string {
  return text === undefined || text.length === 0 ? '-' : text.replace(/\s+/g, ' ');
}
