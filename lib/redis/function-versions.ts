import { RateLimitConfigError } from '../errors/rate-limit-config.error';
import { describeValue } from '../limiter/limit-rule';
import type { FunctionContract } from './contracts/function-contract';
import { V1_CONTRACT } from './contracts/v1.contract';
import { V2_CONTRACT } from './contracts/v2.contract';

/** Every library version this package ships, oldest first. */
export const FUNCTION_VERSIONS: readonly FunctionContract[] = [V1_CONTRACT, V2_CONTRACT];

/** The function called when no `functionName` is configured. */
export const DEFAULT_FUNCTION_NAME = V2_CONTRACT.allowFunction;

/** Names `functionName` accepts. */
export const KNOWN_FUNCTION_NAMES: readonly string[] = FUNCTION_VERSIONS.map((v) => v.allowFunction);

/** Every function name a shipped version registers. */
export function functionNamesOf(contract: FunctionContract): string[] {
  return [contract.allowFunction, contract.batch?.name, contract.peekFunction].filter((name): name is string => name !== undefined);
}

/** Finds the contract of an allow function name, or undefined. */
export function findFunctionContract(functionName: string): FunctionContract | undefined {
  return FUNCTION_VERSIONS.find((v) => v.allowFunction === functionName);
}

/** The contract of an allow function name; throws a configuration error listing the known names. */
export function getFunctionContract(functionName: unknown, optionName = 'functionName'): FunctionContract {
  const contract = typeof functionName === 'string' ? findFunctionContract(functionName) : undefined;
  if (!contract) {
    const known = FUNCTION_VERSIONS.map((v) => `${v.allowFunction} (library ${v.libraryName})`).join(', ');
    throw new RateLimitConfigError([`${optionName} ${describeValue(functionName)} is not a shipped function; known versions: ${known}`]);
  }
  return contract;
}
