import { readLibrarySource } from '../redis/lua-library';
import { FUNCTION_VERSIONS, functionNamesOf } from '../redis/function-versions';
import type { FunctionContract } from '../core/function-contract';
import type { LoadedLibrary } from '../redis/reply';

export function bundledContractOf(libraryName: string): FunctionContract | undefined {
  return FUNCTION_VERSIONS.find((v) => v.libraryName === libraryName);
}

export function libraryOf(libraries: readonly LoadedLibrary[], name: string): LoadedLibrary | undefined {
  return libraries.find((library) => library.name === name);
}

export function bundledSource(contract: FunctionContract): string {
  return readLibrarySource(contract.sourceFile);
}

/** A function name as the CLI reports it: with its shipped version and library, null for those it does not ship. */
export interface NamedFunction {
  functionName: string;
  version: string | null;
  library: string | null;
}

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
