// A small SVG line plot, written by hand so the bench needs no plotting package: series of (x, y)
// points on linear or logarithmic axes, tick labels, a legend. Enough for the scale curves.
import { writeFileSync } from 'node:fs';

const WIDTH = 740;
const HEIGHT = 400;
const MARGIN = { left: 72, right: 250, top: 40, bottom: 56 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

const escape = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** 1500 → "1.5k", 2000000 → "2M", 0.25 → "0.25". */
function label(n) {
  const trim = (x) => Number(x.toPrecision(3)).toString();
  if (Math.abs(n) >= 1e6) return `${trim(n / 1e6)}M`;
  if (Math.abs(n) >= 1e3) return `${trim(n / 1e3)}k`;
  return trim(n);
}

/** Tick values between `min` and `max`: powers of ten on a log axis, about five round steps otherwise. */
function ticks(min, max, log) {
  if (log) {
    const out = [];
    for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) out.push(10 ** e);
    return out;
  }
  const raw = (max - min) / 5;
  const magnitude = 10 ** Math.floor(Math.log10(raw || 1));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  const out = [];
  for (let v = Math.floor(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/**
 * Writes an SVG line plot to `file`. `series`: `[{ name, points: [[x, y, mark?], …] }]` (`mark.open`:
 * a hollow marker); `logX` / `logY` for logarithmic axes (values must be positive); a linear y axis
 * starts at 0; `note`, a line under the x axis label.
 */
export function writeLinePlot(file, { title, xLabel, yLabel, series, logX = false, logY = false, note }) {
  const points = series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  const xs = points.map(([x]) => x);
  const ys = points.map(([, y]) => y);
  let [xMin, xMax] = [Math.min(...xs), Math.max(...xs)];
  let [yMin, yMax] = [logY ? Math.min(...ys) : 0, Math.max(...ys)];
  if (logX) [xMin, xMax] = [10 ** Math.floor(Math.log10(xMin)), 10 ** Math.ceil(Math.log10(xMax))];
  if (logY) [yMin, yMax] = [10 ** Math.floor(Math.log10(yMin)), 10 ** Math.ceil(Math.log10(yMax))];
  const yTicks = ticks(yMin, yMax * (logY ? 1 : 1.05), logY);
  if (!logY) yMax = yTicks.at(-1);
  if (xMin === xMax) [xMin, xMax] = logX ? [xMin / 10, xMax * 10] : [xMin - 1, xMax + 1];
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const scale = (v, min, max, log) =>
    log ? (Math.log10(v) - Math.log10(min)) / (Math.log10(max) - Math.log10(min)) : (v - min) / (max - min);
  const px = (x) => MARGIN.left + scale(x, xMin, xMax, logX) * plotW;
  const py = (y) => MARGIN.top + plotH - scale(y, yMin, yMax, logY) * plotH;
  const f = (n) => n.toFixed(1);

  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2 - MARGIN.right / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">${escape(title)}</text>`,
  );
  for (const t of yTicks.filter((v) => v >= yMin && v <= yMax)) {
    out.push(
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${f(py(t))}" y2="${f(py(t))}" stroke="#e5e5e5"/>`,
      `<text x="${MARGIN.left - 6}" y="${f(py(t) + 4)}" text-anchor="end">${label(t)}</text>`,
    );
  }
  const xTicks = logX ? ticks(xMin, xMax, true) : [...new Set(xs)].sort((a, b) => a - b);
  for (const t of xTicks) {
    out.push(
      `<line x1="${f(px(t))}" x2="${f(px(t))}" y1="${MARGIN.top}" y2="${MARGIN.top + plotH}" stroke="#e5e5e5"/>`,
      `<text x="${f(px(t))}" y="${MARGIN.top + plotH + 18}" text-anchor="middle">${label(t)}</text>`,
    );
  }
  out.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#444"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 14}" text-anchor="middle">${escape(xLabel)}</text>`,
    ...(note
      ? [`<text x="${WIDTH - 8}" y="${HEIGHT - 4}" text-anchor="end" font-size="10" fill="#555">${escape(note)}</text>`]
      : []),
    `<text transform="translate(18 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escape(yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const valid = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    out.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${valid.map(([x, y]) => `${f(px(x))},${f(py(y))}`).join(' ')}"/>`,
      // A point marked `{ open: true }` (third element) is drawn hollow: projected, not measured.
      ...valid.map(
        ([x, y, mark]) =>
          `<circle cx="${f(px(x))}" cy="${f(py(y))}" r="3.5" fill="${mark?.open ? 'white' : color}" stroke="${color}"/>`,
      ),
    );
    const ly = MARGIN.top + 10 + i * 18;
    const lx = MARGIN.left + plotW + 12;
    out.push(
      `<line x1="${lx}" x2="${lx + 18}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"/>`,
      `<text x="${lx + 24}" y="${ly + 4}">${escape(s.name)}</text>`,
    );
  });
  out.push('</svg>');
  writeFileSync(file, `${out.join('\n')}\n`);
}
