import type { Redis } from 'ioredis';
import { LoadedLibrary, parseFunctionList } from './reply';

/** The libraries of one node with their code, sorted by name; only `libraryName` when given. */
export async function librariesOf(node: Redis, libraryName?: string): Promise<LoadedLibrary[]> {
  const reply =
    libraryName === undefined
      ? await node.call('FUNCTION', 'LIST', 'WITHCODE')
      : await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', libraryName, 'WITHCODE');
  const libraries = parseFunctionList(reply);
  // LIBRARYNAME is a pattern; only the exact name counts.
  return (libraryName === undefined ? libraries : libraries.filter((library) => library.name === libraryName)).sort((a, b) => a.name.localeCompare(b.name));
}
