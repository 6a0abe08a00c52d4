import type { Redis } from 'ioredis';
import { readLibrarySource } from '../redis/lua-library';
import { findFunctionContract, FUNCTION_VERSIONS } from '../redis/function-versions';
import type { FunctionContract } from '../redis/contracts/function-contract';
import { LoadedLibrary, parseFunctionList } from '../redis/reply';

/** The libraries of one node, with their code. */
export async function librariesOf(node: Redis, libraryName?: string): Promise<LoadedLibrary[]> {
  const reply = libraryName === undefined ? await node.call('FUNCTION', 'LIST', 'WITHCODE') : await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', libraryName, 'WITHCODE');
  const libraries = parseFunctionList(reply);
  // LIBRARYNAME is a pattern; only the exact name counts.
  return (libraryName === undefined ? libraries : libraries.filter((library) => library.name === libraryName)).sort((a, b) => a.name.localeCompare(b.name));
}

/** The bundled contract of a library name, if this package ships it. */
export function bundledContractOf(libraryName: string): FunctionContract | undefined {
  return FUNCTION_VERSIONS.find((v) => v.libraryName === libraryName);
}

/** The bundled source of a shipped library. */
export function bundledSource(contract: FunctionContract): string {
  return readLibrarySource(contract.sourceFile);
}

/** Every function name a shipped version registers. */
export function functionNamesOf(contract: FunctionContract): string[] {
  return [contract.allowFunction, contract.batch?.name, contract.peekFunction].filter((name): name is string => name !== undefined);
}

/** The version (`v2`) of a function name, if it is one this package ships. */
export function versionOfFunction(functionName: string): FunctionContract | undefined {
  return findFunctionContract(functionName) ?? FUNCTION_VERSIONS.find((v) => v.peekFunction === functionName || v.batch?.name === functionName);
}

/** Whether an error is Redis saying a library of that name is not loaded. */
export function isLibraryNotFound(error: unknown): boolean {
  return /library not found/i.test(String((error as Error)?.message));
}
