import { formatDuration } from '../../lib/cli/format';

const MIN = 60_000;
const DAY = 24 * 60 * MIN;

describe('formatDuration', () => {
  it.each([
    [0, '0ms'],
    [-5, '0ms'],
    [850, '850ms'],
    [999.9, '999ms'],
    [1000, '1s'],
    [42_000, '42s'],
    [14 * MIN + 5_500, '14m 5s'],
    [2 * 60 * MIN, '2h'],
    // The two largest units, rounded down: a day and 5 minutes is a day.
    [DAY + 5 * MIN, '1d'],
    [7 * DAY - 1, '6d 23h'],
  ])('%d ms is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
