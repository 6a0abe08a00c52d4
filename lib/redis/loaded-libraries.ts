import type { Redis } from 'ioredis';
import { LoadedLibrary, parseFunctionList } from './reply';

/** The libraries of one node by name (only `libraryName` when given), with code unless `withCode` is false. */
export async function librariesOf(node: Redis, libraryName?: string, withCode = true): Promise<LoadedLibrary[]> {
  const args = [...(libraryName === undefined ? [] : ['LIBRARYNAME', libraryName]), ...(withCode ? ['WITHCODE'] : [])];
  const reply = await node.call('FUNCTION', 'LIST', ...args);
  const libraries = parseFunctionList(reply);
  // LIBRARYNAME is a pattern; only the exact name counts.
  return (libraryName === undefined ? libraries : libraries.filter((library) => library.name === libraryName)).sort(
    (a, b) => a.name.localeCompare(b.name),
  );
}
