import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Folder of the bundled `.lua` libraries: `lib/redis/lua` in the sources, `dist/redis/lua` when built. */
export const LUA_DIR = join(__dirname, 'lua');

const sources = new Map<string, string>();

/** The source of a bundled library file, exactly as FUNCTION LOAD receives it. Read once, then cached. */
export function readLibrarySource(fileName: string): string {
  let source = sources.get(fileName);
  if (source === undefined) {
    source = readFileSync(join(LUA_DIR, fileName), 'utf8');
    sources.set(fileName, source);
  }
  return source;
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
 * messages still match the .lua file, and the last line calls the chosen function with the
 * same KEYS and ARGV that FCALL would pass.
 */
const PRELUDE =
  'local registered = {} ' +
  'local redis = setmetatable({ register_function = function(name, callback) ' +
  "if type(name) == 'table' then registered[name.function_name] = name.callback " +
  'else registered[name] = callback end end }, { __index = redis })';

/** Builds the EVAL script that runs `functionName` from a library's source. */
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
