import { readLibrarySource } from '../redis/lua-library';
import { FUNCTION_VERSIONS, functionNamesOf } from '../redis/function-versions';
import type { FunctionContract } from '../core/function-contract';

/** The bundled contract of a library name, if this package ships it. */
export function bundledContractOf(libraryName: string): FunctionContract | undefined {
  return FUNCTION_VERSIONS.find((v) => v.libraryName === libraryName);
}

/** The bundled source of a shipped library. */
export function bundledSource(contract: FunctionContract): string {
  return readLibrarySource(contract.sourceFile);
}

/** The version (`v2`) of a function name, if it is one this package ships. */
export function versionOfFunction(functionName: string): FunctionContract | undefined {
  return FUNCTION_VERSIONS.find((v) => functionNamesOf(v).includes(functionName));
}

/** A function name as the CLI reports it: with its shipped version and library, null for those it does not ship. */
export interface NamedFunction {
  functionName: string;
  /** `v2`, or null for a function this package does not ship. */
  version: string | null;
  library: string | null;
}

/** The version and library of a function name, for the entries the CLI reports per function. */
export function nameFunction(functionName: string): NamedFunction {
  const contract = versionOfFunction(functionName);
  return { functionName, version: contract?.version ?? null, library: contract?.libraryName ?? null };
}
