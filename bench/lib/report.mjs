// What a run reports: the table's rows, each section's raw data and the gated targets, collected in
// one object that the entry point creates and hands to every section; then the table as text.

/** The table's sections, in the order it prints them (sections add rows in the order they run). */
const TABLE_ORDER = [
  '1 ceiling',
  '2 consume',
  '3 http',
  '3 guard',
  '4 memory',
  '5 hot key',
  '6 stacked',
  '7 window memory',
  '8 window time',
  '9 window cost',
  '10 latency',
  '11 scale',
  '12 cluster',
];

/** Progress, on stderr: stdout carries only the table. */
export function log(message) {
  process.stderr.write(`${message}\n`);
}

/**
 * A new, empty report. `rows` become the JSON's `table`, `results.sections` its `sections`, `targets`
 * its `targets`.
 */
export function createReport() {
  const rows = [];
  const results = { sections: {} };
  const targets = {};
  return {
    rows,
    results,
    targets,
    /** One line of the table. `value` is the median (and spread) of what the row compares. */
    row(section, what, { value, spread: s, unit = '×', digits = 3, absolute = '', target = '', pass, note = '' }) {
      if (s) s = { ...s, samples: s.samples.map((n) => Number(n.toPrecision(6))) };
      const format = (n) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));
      const measured = s?.median ?? value;
      const shown = measured === undefined ? '—' : `${format(measured)}${unit === '×' ? '×' : unit ? ` ${unit}` : ''}`;
      const range = s ? `${format(s.min)}–${format(s.max)}` : '';
      const result = pass === undefined ? '' : pass ? 'PASS' : 'FAIL';
      rows.push({
        section,
        what,
        value: shown,
        range,
        absolute: note || absolute,
        target,
        result,
        samples: s?.samples,
      });
    },
    /** A section's raw data, written to the results as `sections[name]`. */
    record(name, data) {
      results.sections[name] = data;
    },
    /** The medians (and spreads) a section's gated rows were judged on, written as `targets[name]`. */
    target(name, value) {
      targets[name] = value;
    },
    /** Puts the rows in the table's order, keeping each section's own order. */
    sortRows() {
      rows.sort((a, b) => TABLE_ORDER.indexOf(a.section) - TABLE_ORDER.indexOf(b.section));
    },
  };
}

/** The table as text: a heading with the run's `info` and what the columns compare, then the rows. */
export function printTable(rows, info, settings, hasBlockCache) {
  const { http, guard, rounds } = settings;
  const header = {
    section: 'section',
    what: 'measurement',
    value: 'median',
    range: 'min–max',
    absolute: 'absolute (medians)',
    target: 'target',
    result: '',
  };
  const all = [header, ...rows];
  const width = (name) => Math.max(...all.map((r) => String(r[name]).length));
  const columns = ['section', 'what', 'value', 'range', 'target', 'result', 'absolute'];
  const widths = Object.fromEntries(columns.map((name) => [name, width(name)]));
  const line = (r) =>
    columns
      .map((name) => String(r[name]).padEnd(widths[name]))
      .join(' | ')
      .trimEnd();
  const out = [];
  out.push(
    `nestjs-sliding-limit benchmark — ${info.date}, ${info.machine.nproc} × ${info.machine.cpu}, Node ${info.machine.node}, Redis ${info.machine.redis}, ${rounds} rounds, total ${info.totalSeconds.toFixed(0)} s, load average ${info.machine.loadAverageAtStart[0]} at start / ${info.machine.loadAverageAtEnd[0]} at end`,
  );
  out.push(
    `consume() = SlidingWindowLimiter defaults (${info.functions.package}, override keys read, ${hasBlockCache ? 'blockCache on, ' : ''}batch on); ` +
      `bare fcall = one FCALL ${info.functions.bareFcall} per decision (the article's function); sections 7–9: ${info.functions.windows} called directly; ` +
      `ratios ours / theirs; AP = ioredis enableAutoPipelining. ` +
      `HTTP: our guard = RateLimitModule.forRoot({ redis: url }) as in the quick start; ${http.connections} connections (${settings.httpRounds} rounds), every limit keyed by an x-client-id header that differs per connection (${http.connections} keys), ` +
      `limit ${http.limit} per ${http.windowMs} ms (nothing rejected). Guard: the same route's guard called alone, without HTTP, ${guard.inFlight} in flight. ` +
      `CPU per decision = this process (or the app) + Redis (INFO cpu) over each slice, per decision; latency: 1 connection, hrtime.`,
  );
  out.push(line(header));
  out.push(columns.map((name) => '-'.repeat(widths[name])).join('-|-'));
  let last;
  for (const r of rows) {
    out.push(line({ ...r, section: r.section === last ? '' : r.section }));
    last = r.section;
  }
  return out.join('\n');
}
