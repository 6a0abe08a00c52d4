import { readLibrarySource } from '../redis/lua-library';
import { FUNCTION_VERSIONS, functionNamesOf } from '../redis/function-versions';
import type { FunctionContract } from '../core/function-contract';
import type { LoadedLibrary } from '../redis/reply';

/** The bundled contract of a library name, if this package ships it. */
export function bundledContractOf(libraryName: string): FunctionContract | undefined {
  return FUNCTION_VERSIONS.find((v) => v.libraryName === libraryName);
}

/** The library of that name among `libraries`. */
export function libraryOf(libraries: readonly LoadedLibrary[], name: string): LoadedLibrary | undefined {
  return libraries.find((library) => library.name === name);
}

/** The bundled source of a shipped library. */
export function bundledSource(contract: FunctionContract): string {
  return readLibrarySource(contract.sourceFile);
}

/** A function name as the CLI reports it: with its shipped version and library, null for those it does not ship. */
export interface NamedFunction {
  functionName: string;
  /** `v2`, or null for a function this package does not ship. */
  version: string | null;
  library: string | null;
}

/** The version and library of a function name, for the entries the CLI reports per function. */
function nameFunction(functionName: string): NamedFunction {
  const contract = FUNCTION_VERSIONS.find((v) => functionNamesOf(v).includes(functionName));
  return { functionName, version: contract?.version ?? null, library: contract?.libraryName ?? null };
}

/** One entry per function name, made by `create` on first sight; `sorted()` lists them by name. */
export function functionEntries<T extends NamedFunction>(create: (named: NamedFunction) => T) {
  const byName = new Map<string, T>();
  return {
    of(functionName: string): T {
      let entry = byName.get(functionName);
      if (!entry) byName.set(functionName, (entry = create(nameFunction(functionName))));
      return entry;
    },
    sorted: (): T[] => [...byName.values()].sort((a, b) => a.functionName.localeCompare(b.functionName)),
  };
}
