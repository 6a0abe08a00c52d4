// What the built package declares, read from its .d.ts files: the report adds the measurements of an
// option (blockCache) only when the build has it. The declarations are searched wherever they live
// under dist/, so moving a type to another file changes nothing here.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { log } from './report.mjs';

/** Type names that wrap another type: the search goes on into what they wrap. */
const WRAPPERS = new Set([
  'Omit',
  'Pick',
  'Partial',
  'Required',
  'Readonly',
  'Record',
  'Exclude',
  'Extract',
  'NonNullable',
  'Promise',
  'Array',
]);

/**
 * Whether interface (or type alias) `typeName`, declared in any .d.ts under `dist`, has a property
 * `option`, itself or through a type it extends or combines. When no .d.ts declares `typeName` at all,
 * any declaration of a property `option` in dist counts (with a warning).
 */
export function declaresOption(dist, typeName, option) {
  const sources = dtsFiles(dist).map((file) => withoutComments(readFileSync(file, 'utf8')));
  const property = new RegExp(`(^|[\\s;,{(])(readonly\\s+)?${option}\\??\\s*:`);
  const seen = new Set();
  const has = (name) => {
    if (seen.has(name)) return false;
    seen.add(name);
    return declarationsOf(sources, name).some(
      ({ members, references }) => property.test(members) || references.some(has),
    );
  };
  if (declarationsOf(sources, typeName).length === 0) {
    log(`  warning: no .d.ts under ${dist} declares ${typeName}; looking for any declaration of "${option}"`);
    return sources.some((source) => property.test(source));
  }
  return has(typeName);
}

function dtsFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return dtsFiles(path);
    return entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function withoutComments(source) {
  return source.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
}

/**
 * Every declaration of `name` in `sources`: `members`, the text of its top-level members (nested object
 * types left out), and `references`, the other type names its `extends` clause or alias mentions.
 */
function declarationsOf(sources, name) {
  const found = [];
  const start = new RegExp(`\\b(interface|type)\\s+${name}\\b`, 'g');
  for (const source of sources) {
    for (const match of source.matchAll(start)) {
      const after = match.index + match[0].length;
      if (match[1] === 'interface') {
        const open = source.indexOf('{', after);
        found.push({ members: scan(source, open, '}').inner, references: typeNames(source.slice(after, open)) });
      } else {
        const equals = source.indexOf('=', after);
        const { inner, outer } = scan(source, equals + 1, ';');
        found.push({ members: inner, references: typeNames(outer) });
      }
    }
  }
  return found;
}

/**
 * Reads `source` from `from` to `stop` at nesting depth 0 (or to the brace closing the one at `from`):
 * `inner`, the text one brace deep (an object type's own members), and `outer`, the text outside braces.
 */
function scan(source, from, stop) {
  let depth = 0;
  let inner = '';
  let outer = '';
  for (let i = from; i < source.length; i++) {
    const char = source[i];
    if (char === '{') depth++;
    else if (char === '}') depth--;
    if (depth === 0 && char === stop) return { inner, outer };
    if (depth === 0 && char !== '}') outer += char;
    else if (depth === 1 && char !== '{') inner += char;
  }
  return { inner, outer };
}

function typeNames(text) {
  return [...text.matchAll(/\b[A-Z]\w*/g)].map(([name]) => name).filter((name) => !WRAPPERS.has(name));
}
