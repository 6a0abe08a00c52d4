import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Folder of the bundled `.lua` libraries: `lib/redis/lua` in the sources, `dist/redis/lua` when built. */
export const LUA_DIR = join(__dirname, 'lua');

/** The most lines a library's part may hold: one job per part, readable at a glance. */
export const MAX_PART_LINES = 150;

/** bullmq's include line: `--- @include "<path relative to the libraries' folder>"`, alone on its line. */
const INCLUDE_LINE = /^--- @include "([^"]*)"[ \t]*(?:\r?\n|$)/gm;

const sources = new Map<string, string>();

/**
 * The text of a bundled library, exactly as FUNCTION LOAD receives it: its file with every part
 * included ({@link assembleLibrary}). The build ships libraries assembled, so in `dist/` this is the
 * file as it is. Read once, then cached.
 */
export function readLibrarySource(fileName: string): string {
  let source = sources.get(fileName);
  if (source === undefined) {
    source = assembleLibrary(LUA_DIR, fileName);
    sources.set(fileName, source);
  }
  return source;
}

/**
 * A library's text with its parts included: each `--- @include "<path>"` line (the path relative to
 * `dir`) is replaced by the part's text, its own includes resolved the same way. A part is included
 * once, where it is first named; a later include of it is dropped.
 * @throws Error naming the including file for a part that is missing or longer than MAX_PART_LINES
 */
export function assembleLibrary(dir: string, fileName: string): string {
  const included = new Set<string>([fileName]);
  const expand = (file: string, text: string): string =>
    text.replace(INCLUDE_LINE, (_line, part: string) => {
      if (included.has(part)) return '';
      included.add(part);
      const path = join(dir, part);
      if (!existsSync(path)) throw new Error(`${file} includes "${part}", which is not in ${dir}`);
      const partText = readFileSync(path, 'utf8');
      const lines = partText.split('\n').length - (partText.endsWith('\n') ? 1 : 0);
      if (lines > MAX_PART_LINES) {
        throw new Error(`${part} (included by ${file}) has ${lines} lines; a part holds at most ${MAX_PART_LINES}`);
      }
      const assembled = expand(part, partText);
      return assembled.endsWith('\n') ? assembled : `${assembled}\n`;
    });
  return expand(fileName, readFileSync(join(dir, fileName), 'utf8'));
}

/** A function of a library, runnable through EVALSHA on servers without Redis Functions. */
export interface LuaScript {
  readonly source: string;
  readonly sha1: string;
}

/*
 * The first line of a library (`#!lua name=…`) is replaced by a one-line prelude that shadows
 * `redis` with a table whose register_function only records the callbacks; every other field
 * falls through to the real `redis`. The library then runs unchanged, line numbers in error
 * messages still match its assembled text (the file the build ships), and the last line calls the
 * chosen function with the same KEYS and ARGV that FCALL would pass.
 */
const PRELUDE =
  'local registered = {} ' +
  'local redis = setmetatable({ register_function = function(name, callback) ' +
  "if type(name) == 'table' then registered[name.function_name] = name.callback " +
  'else registered[name] = callback end end }, { __index = redis })';

/** Builds the EVAL script that runs `functionName` from a library's (assembled) source. */
export function toScript(librarySource: string, functionName: string): LuaScript {
  const firstLineEnd = librarySource.indexOf('\n');
  if (!librarySource.startsWith('#!lua') || firstLineEnd < 0) {
    throw new Error(`not a Redis Function library (no #!lua line): ${librarySource.slice(0, 40)}`);
  }
  const source =
    `${PRELUDE}${librarySource.slice(firstLineEnd)}\n` + `return registered['${functionName}'](KEYS, ARGV)\n`;
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/** The `name=` of a library's `#!lua` line. */
export function libraryNameOf(librarySource: string): string | undefined {
  return /^#!lua\s+name=(\S+)/.exec(librarySource)?.[1];
}
