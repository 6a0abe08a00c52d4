#!/usr/bin/env node
// Checks the documentation: README.md and docs/**/*.md (bench/README.md and CHANGELOG.md for links
// and line length only).
//
//   node scripts/check-docs.mjs
//
// 1. Every relative link and image target exists; a `#anchor` matches a heading's GitHub slug.
// 2. No prose line is longer than 120 characters (code, tables, headings, comments and lone links
//    are exempt).
// 3. Each docs file starts with a `# Title` and, when it has 3 or more `##` sections, a table of
//    contents linking to every one of them before the first.
// 4. README.md has at most 300 lines.
// 5. Every ```ts / ```typescript block compiles against the repository's tsconfig.json, each block
//    as its own module. A block preceded by `<!-- not compiled: <reason> -->` is skipped.
//
// Prints every problem as `file:line: message` and exits 1 if there is any.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MAX_LINE = 120;
const MAX_README_LINES = 300;
const NOT_COMPILED = /^<!--\s*not compiled:\s*\S.*-->$/;
const SNIPPET_DIR = path.join(ROOT, 'docs', '.snippets');

const problems = [];
const report = (file, line, message) => problems.push({ file, line, message });
let linkCount = 0;

// ---------------------------------------------------------------------------------------------
// Reading Markdown

function listMarkdown(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listMarkdown(full));
    else if (entry.name.endsWith('.md')) out.push(full);
  }
  return out.sort();
}

/**
 * Splits a Markdown file into lines, each marked as inside a fenced code block or not, and
 * collects the fenced blocks with their info string and the line of their opening fence.
 */
function parse(file) {
  const text = readFileSync(file, 'utf8');
  const lines = text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const inCode = new Array(lines.length).fill(false);
  const inComment = new Array(lines.length).fill(false);
  const blocks = [];
  let fence = null; // { marker, indent, info, start, body }
  let comment = false;
  lines.forEach((line, i) => {
    if (fence) {
      inCode[i] = true;
      const close = line.match(/^(\s*)(`{3,}|~{3,})\s*$/);
      if (close && close[2][0] === fence.marker[0] && close[2].length >= fence.marker.length) {
        blocks.push(fence);
        fence = null;
      } else {
        fence.body.push(stripIndent(line, fence.indent));
      }
      return;
    }
    const open = line.match(/^(\s*)(`{3,}|~{3,})\s*([^`]*)$/);
    if (open) {
      inCode[i] = true;
      fence = { marker: open[2], indent: open[1].length, info: open[3].trim(), start: i, body: [] };
      return;
    }
    if (comment || /^\s*<!--/.test(line)) {
      inComment[i] = true;
      comment = !line.includes('-->');
    }
  });
  if (fence) report(file, fence.start + 1, 'code fence is never closed');
  return { file, lines, inCode, inComment, blocks };
}

function stripIndent(line, indent) {
  let n = 0;
  while (n < indent && line[n] === ' ') n++;
  return line.slice(n);
}

// ---------------------------------------------------------------------------------------------
// Headings and GitHub slugs

/** The text GitHub renders for a heading's Markdown: no code ticks, emphasis, links or tags. */
function headingText(markdown) {
  return markdown
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/`+/g, '')
    .replace(/(\*\*|__|\*)(?=\S)([^*]*?\S)\1/g, '$2')
    .trim();
}

/** github-slugger: lowercase, punctuation other than `-` and `_` removed, spaces become `-`. */
function slug(text) {
  return headingText(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Headings of a parsed file: `{ level, text, slug, line }`, duplicate slugs suffixed `-1`, `-2`… */
function headings(doc) {
  if (doc.headings) return doc.headings;
  const occurrences = new Map(); // as github-slugger counts them
  const out = [];
  const add = (level, text, line) => {
    const base = slug(text);
    let id = base;
    while (occurrences.has(id)) {
      occurrences.set(base, occurrences.get(base) + 1);
      id = `${base}-${occurrences.get(base)}`;
    }
    occurrences.set(id, 0);
    out.push({ level, text, slug: id, line });
  };
  doc.lines.forEach((line, i) => {
    if (doc.inCode[i] || doc.inComment[i]) return;
    const atx = line.match(/^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+\s*)?$/);
    if (atx) return add(atx[1].length, atx[2], i + 1);
    const next = doc.lines[i + 1];
    if (
      line.trim() &&
      !doc.inCode[i + 1] &&
      next !== undefined &&
      /^ {0,3}(=+|-+)\s*$/.test(next) &&
      !/^\s*([-*+]|\d+\.|\|)\s/.test(line) &&
      !line.trim().startsWith('|')
    ) {
      add(next.trim()[0] === '=' ? 1 : 2, line.trim(), i + 1);
    }
  });
  // Explicit HTML anchors also count.
  doc.lines.forEach((line, i) => {
    if (doc.inCode[i]) return;
    for (const m of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g))
      out.push({ level: 0, text: m[1], slug: m[1], line: i + 1 });
  });
  doc.headings = out;
  return out;
}

const parsed = new Map();
function load(file) {
  if (!parsed.has(file)) parsed.set(file, parse(file));
  return parsed.get(file);
}

// ---------------------------------------------------------------------------------------------
// 1. Links

/** Inline links and images, reference definitions and HTML href/src on one line (code spans removed). */
function linksOf(line) {
  const text = line.replace(/(`+)[\s\S]*?\1/g, (m) => ' '.repeat(m.length));
  const out = [];
  for (const m of text.matchAll(/!?\[(?:[^\][]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+"[^"]*")?\s*\)/g)) {
    out.push(m[1].replace(/^<|>$/g, ''));
  }
  const def = text.match(/^ {0,3}\[[^\]]+\]:\s*(\S+)/);
  if (def) out.push(def[1].replace(/^<|>$/g, ''));
  for (const m of text.matchAll(/<(?:a|img)\s[^>]*?(?:href|src)="([^"]+)"/g)) out.push(m[1]);
  return out;
}

function checkLinks(doc) {
  const rel = path.relative(ROOT, doc.file);
  doc.lines.forEach((line, i) => {
    if (doc.inCode[i]) return;
    for (const target of linksOf(line)) {
      linkCount++;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:, …
      if (target.startsWith('//')) continue;
      const hash = target.indexOf('#');
      const pathPart = hash === -1 ? target : target.slice(0, hash);
      const anchor = hash === -1 ? undefined : target.slice(hash + 1);
      let file = doc.file;
      if (pathPart) {
        let decoded;
        try {
          decoded = decodeURIComponent(pathPart);
        } catch {
          report(rel, i + 1, `link target is not valid URL encoding: ${target}`);
          continue;
        }
        file = decoded.startsWith('/') ? path.join(ROOT, decoded) : path.resolve(path.dirname(doc.file), decoded);
        if (!existsSync(file)) {
          report(rel, i + 1, `link target does not exist: ${target}`);
          continue;
        }
      }
      if (anchor === undefined) continue;
      if (!anchor) {
        report(rel, i + 1, `empty anchor in link: ${target}`);
        continue;
      }
      if (!file.endsWith('.md') || statSync(file).isDirectory()) continue;
      let wanted;
      try {
        wanted = decodeURIComponent(anchor).toLowerCase();
      } catch {
        wanted = anchor.toLowerCase();
      }
      if (!headings(load(file)).some((h) => h.slug === wanted)) {
        report(rel, i + 1, `no heading with anchor #${anchor} in ${path.relative(ROOT, file)}`);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// 2. Line length

function checkLineLength(doc) {
  const rel = path.relative(ROOT, doc.file);
  doc.lines.forEach((line, i) => {
    if (doc.inCode[i] || doc.inComment[i]) return;
    const length = [...line].length;
    if (length <= MAX_LINE) return;
    const trimmed = line.trim();
    if (trimmed.startsWith('|')) return; // table row
    if (/^#{1,6}\s/.test(trimmed)) return; // heading
    if (!/\s/.test(trimmed)) return; // one long word, URL or path
    if (/^(?:[-*+]\s+|\d+\.\s+)?!?\[[^\]]*\]\([^)]*\)[.,;:]?$/.test(trimmed)) return; // a lone link
    report(rel, i + 1, `line is ${length} characters long (at most ${MAX_LINE} for prose)`);
  });
}

// ---------------------------------------------------------------------------------------------
// 3. Title and table of contents of docs files

function checkDocStructure(doc) {
  const rel = path.relative(ROOT, doc.file);
  const first = doc.lines.findIndex((l) => l.trim() !== '');
  if (first === -1 || !/^# \S/.test(doc.lines[first]))
    report(rel, first + 1 || 1, 'a docs file starts with a "# Title"');
  const sections = headings(doc).filter((h) => h.level === 2);
  if (sections.length < 3) return;
  const top = sections[0].line - 1; // lines before the first `##`
  const linked = new Set();
  for (let i = 0; i < top; i++) {
    if (doc.inCode[i] || !/^\s*(?:[-*+]|\d+\.)\s/.test(doc.lines[i])) continue;
    for (const target of linksOf(doc.lines[i])) if (target.startsWith('#')) linked.add(target.slice(1).toLowerCase());
  }
  if (linked.size === 0) {
    report(
      rel,
      sections[0].line,
      `no table of contents: list links to its ${sections.length} "##" sections before the first`,
    );
    return;
  }
  for (const s of sections) {
    if (!linked.has(s.slug))
      report(rel, s.line, `section "${s.text}" is missing from the table of contents (#${s.slug})`);
  }
}

// ---------------------------------------------------------------------------------------------
// 4. README length

function checkReadmeLength(doc) {
  if (doc.lines.length > MAX_README_LINES) {
    report('README.md', MAX_README_LINES + 1, `README.md has ${doc.lines.length} lines (at most ${MAX_README_LINES})`);
  }
}

// ---------------------------------------------------------------------------------------------
// 5. Snippets compile

function collectSnippets(doc) {
  const rel = path.relative(ROOT, doc.file);
  const out = [];
  for (const block of doc.blocks) {
    const lang = block.info.split(/[\s{]/)[0].toLowerCase();
    if (lang !== 'ts' && lang !== 'typescript') continue;
    const before = (doc.lines[block.start - 1] ?? '').trim();
    if (before.startsWith('<!--') && /not compiled/i.test(before)) {
      if (!NOT_COMPILED.test(before))
        report(rel, block.start, 'write "<!-- not compiled: <reason> -->" to skip a snippet');
      continue;
    }
    const name = `${rel.replace(/\.md$/, '').replace(/[^A-Za-z0-9]+/g, '-')}-${block.start + 1}.ts`;
    out.push({
      rel,
      fenceLine: block.start + 1, // 1-based line of the opening fence
      fileName: path.join(SNIPPET_DIR, name),
      text: `${block.body.join('\n')}\n\nexport {};\n`,
    });
  }
  return out;
}

function compileSnippets(snippets) {
  if (snippets.length === 0) return;
  const require = createRequire(path.join(ROOT, 'package.json'));
  const ts = require('typescript');
  const configPath = path.join(ROOT, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, ts.sys.readFile);
  if (config.error) {
    report('tsconfig.json', 1, ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
    return;
  }
  const parsedConfig = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT, undefined, configPath);
  const options = {
    ...parsedConfig.options,
    noEmit: true,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    incremental: false,
    composite: false,
    // A snippet shows declarations for the reader to use; unused ones are not a mistake there.
    noUnusedLocals: false,
    noUnusedParameters: false,
  };
  const virtual = new Map(snippets.map((s) => [path.normalize(s.fileName), s]));
  const failed = new Set();
  const host = ts.createCompilerHost(options, true);
  const { fileExists, readFile, getSourceFile, directoryExists } = host;
  host.fileExists = (f) => virtual.has(path.normalize(f)) || fileExists.call(host, f);
  host.readFile = (f) => virtual.get(path.normalize(f))?.text ?? readFile.call(host, f);
  host.directoryExists = (d) =>
    path.normalize(d) === SNIPPET_DIR || (directoryExists ? directoryExists.call(host, d) : ts.sys.directoryExists(d));
  host.getSourceFile = (f, languageVersion, onError, shouldCreate) => {
    const snippet = virtual.get(path.normalize(f));
    if (snippet) {
      try {
        return ts.createSourceFile(f, snippet.text, languageVersion, true, ts.ScriptKind.TS);
      } catch (error) {
        // The parser can assert on odd fragments (a decorator before a statement): report, go on.
        report(
          snippet.rel,
          snippet.fenceLine,
          `snippet cannot be parsed by TypeScript: ${error.message.split('\n')[0]}`,
        );
        failed.add(snippet);
        return ts.createSourceFile(f, 'export {};\n', languageVersion, true, ts.ScriptKind.TS);
      }
    }
    return getSourceFile.call(host, f, languageVersion, onError, shouldCreate);
  };
  host.writeFile = () => {};
  const program = ts.createProgram({ rootNames: [...virtual.keys()], options, host });
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const snippet = d.file && virtual.get(path.normalize(d.file.fileName));
    if (!snippet) continue; // errors inside lib/ or node_modules are not the snippet's
    const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    report(snippet.rel, snippet.fenceLine + 1 + line, `snippet does not compile: TS${d.code}: ${message}`);
    failed.add(snippet);
  }
  return snippets.length - failed.size;
}

// ---------------------------------------------------------------------------------------------

const readme = path.join(ROOT, 'README.md');
const docs = listMarkdown(path.join(ROOT, 'docs'));
const checked = [readme, ...docs];
const linksOnly = [path.join(ROOT, 'bench', 'README.md')].filter((f) => existsSync(f));
const changelog = path.join(ROOT, 'CHANGELOG.md');

const snippets = [];
for (const file of checked) {
  if (!existsSync(file)) {
    report(path.relative(ROOT, file), 1, 'file is missing');
    continue;
  }
  const doc = load(file);
  checkLinks(doc);
  checkLineLength(doc);
  if (file === readme) checkReadmeLength(doc);
  else checkDocStructure(doc);
  snippets.push(...collectSnippets(doc));
}
for (const file of linksOnly) checkLinks(load(file));
if (existsSync(changelog)) {
  checkLinks(load(changelog));
  checkLineLength(load(changelog));
}

const compiled = compileSnippets(snippets) ?? 0;

problems.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
for (const p of problems) console.error(`${p.file}:${p.line}: ${p.message}`);
const files = checked.length + linksOnly.length + (existsSync(changelog) ? 1 : 0);
if (problems.length > 0) {
  console.error(
    `check-docs: ${problems.length} problem(s); ${files} files, ${linkCount} links, ${compiled} of ${snippets.length} snippets OK`,
  );
  process.exit(1);
}
console.log(`check-docs: ${files} files, ${linkCount} links, ${snippets.length} snippets OK`);
