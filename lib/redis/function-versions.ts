import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { describeValue } from '../core/value-checks';
import type { FunctionContract } from '../core/function-contract';
import { V1_CONTRACT } from './contracts/v1.contract';
import { V2_CONTRACT } from './contracts/v2.contract';

/** Every library version this package ships, oldest first. */
export const FUNCTION_VERSIONS: readonly FunctionContract[] = [V1_CONTRACT, V2_CONTRACT];

/** The function called when no `functionName` is configured, everywhere in the package: set here only. */
export const DEFAULT_FUNCTION_NAME = V2_CONTRACT.allowFunction;

/** Names `functionName` accepts. */
export const KNOWN_FUNCTION_NAMES: readonly string[] = FUNCTION_VERSIONS.map((v) => v.allowFunction);

/** Every function name a shipped version registers. */
export function functionNamesOf(contract: FunctionContract): string[] {
  return [contract.allowFunction, contract.batch?.name, contract.peekFunction].filter(
    (name): name is string => name !== undefined,
  );
}

/** Finds the contract of an allow function name, or undefined. */
export function findFunctionContract(functionName: string): FunctionContract | undefined {
  return FUNCTION_VERSIONS.find((v) => v.allowFunction === functionName);
}

/** Problems of a function name: it must name a shipped version. */
export function describeFunctionNameProblems(functionName: unknown, label: string): string[] {
  if (typeof functionName === 'string' && findFunctionContract(functionName)) return [];
  return [
    `${label} ${describeValue(functionName)} is not a shipped function; known: ${KNOWN_FUNCTION_NAMES.join(', ')}`,
  ];
}

/** The contract of an allow function name; throws a configuration error listing the known names. */
export function getFunctionContract(functionName: string): FunctionContract {
  const contract = findFunctionContract(functionName);
  if (!contract) throw new RateLimitConfigError(describeFunctionNameProblems(functionName, 'functionName'));
  return contract;
}
