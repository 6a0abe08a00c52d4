import { joined } from '../core/call-arguments';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { AllowCall, SERVER_TIME } from '../core/function-contract';
import type { SlidingLimitRule } from '../core/limit-rule';
import type { ActiveVersion } from './function-routing';
import { PolicedCall, type CallSettlers } from './redis-call-policy';

/** Who sent a call and is told when it is over (the batcher, which counts the calls in flight). */
export interface CallSender {
  callSettled(): void;
}

/**
 * One decision's call of its version's allow function: what the contract reads (this is its
 * `AllowCall`: keys, rules, time, request id, cost), what the call policy keeps while the call is in
 * flight (this is a `PolicedCall`), and who is told the decision (a subclass). A decision on its way
 * to Redis is this one object, not a call wrapped around a description of the call around a
 * receiver. A retry sends the same keys and arguments, built once: the same request id.
 */
export abstract class DecisionCall
  extends PolicedCall<MultiRateLimitDecision>
  implements AllowCall, CallSettlers<MultiRateLimitDecision>
{
  /** The version deciding; set before the call is sent. */
  version: ActiveVersion | undefined = undefined;
  nowMs: number | typeof SERVER_TIME = 0;
  member = '';
  maxClockSkewMs = 0;
  cost = 1;
  overrides = false;
  /** Who sent it in a call of its own (undefined in a batch, which is a call of its own). */
  sender: CallSender | undefined = undefined;
  /** What the call sends, made when it is first sent: how many KEYS, and KEYS then ARGV. */
  private keyCount = 0;
  private keysAndArguments: readonly (string | number)[] | undefined = undefined;

  constructor(
    readonly keys: readonly string[],
    readonly rules: readonly SlidingLimitRule[],
  ) {
    super();
  }

  /** Redis decided: the decision, read from the reply. */
  abstract resolve(decision: MultiRateLimitDecision): void;

  /** Redis did not decide, or the decision cannot be made. */
  abstract reject(error: unknown): void;

  send(): Promise<unknown> {
    const { contract, runner } = this.version as ActiveVersion;
    if (this.keysAndArguments === undefined) {
      if (contract.allowKeyCount && contract.allowKeysAndArguments) {
        this.keyCount = contract.allowKeyCount(this);
        this.keysAndArguments = contract.allowKeysAndArguments(this, this.keyCount);
      } else {
        // A version that reads overrides takes their keys after the limit keys.
        const keys = contract.allowKeys ? contract.allowKeys(this) : this.keys;
        this.keyCount = keys.length;
        this.keysAndArguments = joined(keys, contract.allowArguments(this));
      }
    }
    return runner.run(contract.allowFunction, this.keyCount, this.keysAndArguments, false);
  }

  override recover(error: unknown): Promise<unknown> | undefined {
    // Nothing was sent (building the arguments threw): nothing to recover.
    if (this.keysAndArguments === undefined) return undefined;
    const { contract, runner } = this.version as ActiveVersion;
    return runner.recover?.(error, contract.allowFunction, this.keyCount, this.keysAndArguments, false);
  }

  parse(reply: unknown): MultiRateLimitDecision {
    return (this.version as ActiveVersion).reader.allow(reply, this);
  }

  override done(): void {
    this.sender?.callSettled();
  }
}

/** A decision call whose outcome settles a promise of its own: a group of a split decision, the insurance's. */
export class PromisedDecisionCall extends DecisionCall {
  readonly promise: Promise<MultiRateLimitDecision>;
  private readonly settleWith: (decision: MultiRateLimitDecision) => void;
  private readonly failWith: (error: unknown) => void;

  constructor(keys: readonly string[], rules: readonly SlidingLimitRule[]) {
    super(keys, rules);
    let settleWith: (decision: MultiRateLimitDecision) => void = () => undefined;
    let failWith: (error: unknown) => void = () => undefined;
    this.promise = new Promise((resolve, reject) => {
      settleWith = resolve;
      failWith = reject;
    });
    this.settleWith = settleWith;
    this.failWith = failWith;
  }

  resolve(decision: MultiRateLimitDecision): void {
    this.settleWith(decision);
  }

  reject(error: unknown): void {
    this.failWith(error);
  }
}
