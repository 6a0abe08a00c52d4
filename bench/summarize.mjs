// Markdown tables from a results file, for docs/performance.md: the table's rows of the chosen
// sections (by the prefix of their table section, e.g. "2", "3 http", "11"), and the scale and
// cluster curves as tables of their own.
//
//   node bench/summarize.mjs bench/results/<date>.json [section prefix …]
import { readFileSync } from 'node:fs';
import { compact } from './lib/measure.mjs';

const [file, ...prefixes] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/summarize.mjs <results.json> [section prefix …]');
  process.exit(2);
}
const results = JSON.parse(readFileSync(file, 'utf8'));
const cell = (text) => String(text ?? '').replace(/\|/g, '\\|');
const table = (header, rows) =>
  [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');

const wanted = (section) => prefixes.length === 0 || prefixes.some((p) => section === p || section.startsWith(`${p} `));
const bySection = new Map();
for (const row of results.table.filter((r) => wanted(r.section))) {
  if (!bySection.has(row.section)) bySection.set(row.section, []);
  bySection.get(row.section).push(row);
}
for (const [section, rows] of bySection) {
  console.log(`\n#### ${section}\n`);
  console.log(
    table(
      ['measurement', 'median', 'min–max', 'target', '', 'absolute (medians)'],
      rows.map((r) => [r.what, r.value, r.range, r.target, r.result, r.absolute]),
    ),
  );
}

const scale = results.sections?.scale;
if (scale && (prefixes.length === 0 || prefixes.includes('11'))) {
  console.log('\n#### keys curve\n');
  console.log(
    table(
      [
        'keys',
        'consume() decisions/s',
        'consume() CPU µs (client + Redis)',
        'bare FCALL decisions/s',
        'bare FCALL CPU µs',
      ],
      scale.keys.map((p) => [
        compact(p.keys),
        compact(p.medians.ours.perSecond),
        `${p.medians.ours.cpuMicros.toFixed(1)} (${p.medians.ours.clientMicros.toFixed(1)} + ${p.medians.ours.redisMicros.toFixed(1)})`,
        compact(p.medians.bare.perSecond),
        `${p.medians.bare.cpuMicros.toFixed(1)} (${p.medians.bare.clientMicros.toFixed(1)} + ${p.medians.bare.redisMicros.toFixed(1)})`,
      ]),
    ),
  );
  console.log('\n#### memory (MB of used_memory; * projected)\n');
  const keyCounts = scale.memory.cells[0].points.map((p) => p.keys);
  console.log(
    table(
      ['window, limit', 'bytes per key', ...keyCounts.map((k) => `${compact(k)} keys`)],
      scale.memory.cells.map((c) => {
        const measured = c.points.filter((p) => p.measured).at(-1) ?? c.points[0];
        return [
          c.label,
          Math.round(measured.bytes / measured.keys),
          ...c.points.map((p) => `${(p.bytes / 2 ** 20).toFixed(1)}${p.measured ? '' : '*'}`),
        ];
      }),
    ),
  );
  for (const [name, x, label] of [
    ['stacked', 'limits', 'stacked limits'],
    ['batch', 'maxSize', 'batch maxSize'],
  ]) {
    console.log(`\n#### ${label}\n`);
    console.log(
      table(
        [
          label,
          'Redis time µs/decision',
          'Redis CPU µs/decision',
          'client CPU µs/decision',
          'decisions/FCALL',
          'decisions/s',
        ],
        scale[name].points.map((p) => [
          p[x],
          p.redisUsecPerDecision.toFixed(2),
          p.redisMicros.toFixed(2),
          p.clientMicros.toFixed(2),
          p.decisionsPerCall.toFixed(1),
          compact(p.perSecond),
        ]),
      ),
    );
  }
}
