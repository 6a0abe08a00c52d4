import type { Redis } from 'ioredis';
import { LoadedLibrary, parseFunctionList } from './reply';

/**
 * The libraries of one node, sorted by name; only `libraryName` when given. With their code unless
 * `withCode` is false (a health probe needs the names only, not kilobytes of Lua per node).
 */
export async function librariesOf(node: Redis, libraryName?: string, withCode = true): Promise<LoadedLibrary[]> {
  const args = [...(libraryName === undefined ? [] : ['LIBRARYNAME', libraryName]), ...(withCode ? ['WITHCODE'] : [])];
  const reply = await node.call('FUNCTION', 'LIST', ...args);
  const libraries = parseFunctionList(reply);
  // LIBRARYNAME is a pattern; only the exact name counts.
  return (libraryName === undefined ? libraries : libraries.filter((library) => library.name === libraryName)).sort(
    (a, b) => a.name.localeCompare(b.name),
  );
}
