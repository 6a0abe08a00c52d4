import type { FunctionContract } from '../core/function-contract';
import { FUNCTION_VERSIONS, functionNamesOf } from '../redis/function-versions';
import { usage } from './exit-codes';

/** The shipped versions, for messages: `v1 (rate_limit_v1), v2 (rate_limit_v2)`. */
function knownVersions(): string {
  return FUNCTION_VERSIONS.map((v) => `${v.version} (${v.libraryName})`).join(', ');
}

/** The contract a `<version>` argument names: `v2`, `rate_limit_v2` or `sliding_allow_v2`. */
function findVersion(argument: string): FunctionContract | undefined {
  const wanted = argument.toLowerCase();
  return FUNCTION_VERSIONS.find(
    (v) => v.version === wanted || v.libraryName === argument || functionNamesOf(v).includes(argument),
  );
}

export function requireBundledVersion(argument: string): FunctionContract {
  const contract = findVersion(argument);
  if (!contract) throw usage(`"${argument}" is not a version this package ships; known: ${knownVersions()}`);
  return contract;
}

/** The library a `delete` argument names: a shipped version, or any library name. */
export function requireLibraryArgument(argument: string): { library: string; contract?: FunctionContract } {
  const contract = findVersion(argument);
  if (contract) return { library: contract.libraryName, contract };
  if (!/^[A-Za-z0-9_]+$/.test(argument)) {
    throw usage(
      `"${argument}" is neither a shipped version (${knownVersions()}) nor a library name (letters, digits, _)`,
    );
  }
  return { library: argument };
}
