import type { FunctionContract } from '../core/function-contract';
import type { LuaRunner } from '../core/lua-runner';
import { decisionReaderOf, type DecisionReader } from '../redis/contracts/decision-readers';
import { CANARY_BUCKETS, canaryBucket } from './canary-bucket';
import { clockFor, type Clock } from './clock';
import type { LimiterBackend } from '../core/limiter-backend';
import type { CanarySplit, FunctionSelection } from '../core/function-selection';
import type { ClockSource } from './sliding-window-limiter.interfaces';
import type { LoadFunctionsPolicy } from '../core/lua-runner';

/** A function version ready to be called: its contract, the runner that calls it, its clock, its replies' reader. */
export interface ActiveVersion {
  readonly contract: FunctionContract;
  readonly runner: LuaRunner;
  readonly now: Clock;
  readonly reader: DecisionReader;
}

/** The canary of `selection` that takes traffic: none when it is at 0 % or names the stable function. */
export function canaryInEffect(selection: FunctionSelection): CanarySplit | undefined {
  const { canary } = selection;
  return canary && canary.percent > 0 && canary.functionName !== selection.functionName ? canary : undefined;
}

/** Makes `contract` callable on `backend` (loading or verifying its Lua per `policy`), with its clock. */
export async function activateVersion(
  backend: LimiterBackend,
  contract: FunctionContract,
  clock: ClockSource,
  policy: LoadFunctionsPolicy,
): Promise<ActiveVersion> {
  return {
    contract,
    runner: await backend.runnerFor(contract, policy),
    now: clockFor(contract, clock, backend.commands),
    reader: decisionReaderOf(contract),
  };
}

/** Whether `identity` is in the sticky share of identities a canary of `percent` takes. */
export function isInCanary(identity: string, percent: number): boolean {
  return canaryBucket(identity) < canaryBucketsOf(percent);
}

function canaryBucketsOf(percent: number): number {
  return Math.round((percent / 100) * CANARY_BUCKETS);
}

/** Which version decides a key: the stable one, or the canary for a sticky share. Immutable, swapped whole. */
export class FunctionRouting {
  private readonly canaryBuckets: number;

  constructor(
    readonly stable: ActiveVersion,
    readonly canary?: ActiveVersion,
    readonly canaryPercent = 0,
  ) {
    this.canaryBuckets = canary ? canaryBucketsOf(canaryPercent) : 0;
  }

  /** The version for a key (the limited identity, without the key prefix). */
  pick(key: string): ActiveVersion {
    if (this.canaryBuckets === 0 || !this.canary) return this.stable;
    return canaryBucket(key) < this.canaryBuckets ? this.canary : this.stable;
  }

  get selection(): FunctionSelection {
    const functionName = this.stable.contract.allowFunction;
    return this.canary
      ? { functionName, canary: { functionName: this.canary.contract.allowFunction, percent: this.canaryPercent } }
      : { functionName };
  }
}
