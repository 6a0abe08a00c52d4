import { requestDecision } from '../core/caller-decisions';
import type { MultiRateLimitDecision, RateLimitDecision } from '../core/decisions';
import type { AllowCall } from '../core/function-contract';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { callGroups } from './call-groups';
import type { NowMs } from './clock';
import { DecisionBatcher } from './decision-batcher';
import type { ActiveVersion } from './function-routing';
import type { DecisionChannel } from './decision-channel';
import type { CallSettlers } from './redis-call-policy';
import type { MemberIdSource } from './member-ids';
import { isBucketed, type SlidingLimitRule } from '../core/limit-rule';

const SPLIT_WEIGHTED =
  'stacked limits with a cost or precisionMs must be decided in one call: on a Redis Cluster, give their keys ' +
  'one hash tag (the guard does for limits of one identity)';

/**
 * Decides a request's keys in as few calls as the contract and the cluster allow (see
 * {@link callGroups}). With several groups the request carries one id and one time in all of them,
 * and is removed again from the groups that recorded it when another group rejected it.
 */
export class GroupedDecisions {
  private readonly batcher: DecisionBatcher;

  constructor(
    private readonly channel: DecisionChannel,
    private readonly members: MemberIdSource,
    private readonly maxClockSkewMs: number,
    /** Most decisions sent in one call (see {@link DecisionBatcher}); 1 turns batching off. */
    maxBatchSize: number,
    /** Whether calls read per-key overrides, on the versions that have them. */
    private readonly readOverrides: boolean,
  ) {
    this.batcher = new DecisionBatcher(channel, maxBatchSize);
  }

  /**
   * Decides one request's keys; `settlers` is told the outcome (or the error). One group — the common
   * case — goes straight to the batcher, without a promise of its own.
   */
  decide(
    version: ActiveVersion,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    nowMs: NowMs,
    cost: number,
    settlers: CallSettlers<MultiRateLimitDecision>,
  ): void {
    const member = this.members.next();
    // The common case, one call, without building groups.
    if (keys.length === 1) return this.once(version, keys, rules, nowMs, member, cost, settlers);
    const groups = callGroups(keys, version.contract.multiKey, this.channel.clustered);
    if (groups.length === 1) return this.once(version, keys, rules, nowMs, member, cost, settlers);
    // A request taken back out of a group is one ZREM of its id: that undoes a log entry of cost 1,
    // not a cost spread over entries or a sub-window's count.
    if (cost !== 1 || rules.some(isBucketed)) return settlers.reject(new RateLimitConfigError([SPLIT_WEIGHTED]));
    this.inGroups(version, keys, rules, nowMs, member, groups).then(
      (decision) => settlers.resolve(decision),
      (error: unknown) => settlers.reject(error),
    );
  }

  /** {@link GroupedDecisions.decide} as a promise, for callers off the hot path. */
  decided(
    version: ActiveVersion,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    nowMs: NowMs,
    cost = 1,
  ): Promise<MultiRateLimitDecision> {
    return new Promise((resolve, reject) => this.decide(version, keys, rules, nowMs, cost, { resolve, reject }));
  }

  private async inGroups(
    version: ActiveVersion,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    nowMs: NowMs,
    member: string,
    groups: number[][],
  ): Promise<MultiRateLimitDecision> {
    const decisions = await Promise.all(
      groups.map(
        (group) =>
          new Promise<MultiRateLimitDecision>((resolve, reject) =>
            this.once(
              version,
              group.map((i) => keys[i]),
              group.map((i) => rules[i]),
              nowMs,
              member,
              1,
              { resolve, reject },
            ),
          ),
      ),
    );
    const limits = new Array<RateLimitDecision>(keys.length);
    groups.forEach((group, g) => group.forEach((index, j) => (limits[index] = decisions[g].limits[j])));
    const { functionName } = decisions[0];
    if (decisions.every((decision) => decision.allowed)) return requestDecision(true, limits, functionName);

    const recorded = groups.filter((_, g) => decisions[g].allowed).flat();
    await Promise.all(
      recorded.map((i) => this.channel.call(() => this.channel.commands.zrem(keys[i], member), keys[i])),
    );
    for (const i of recorded) limits[i] = { ...limits[i], remaining: limits[i].remaining + 1 };
    return requestDecision(false, limits, functionName);
  }

  private once(
    version: ActiveVersion,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    nowMs: NowMs,
    member: string,
    cost: number,
    settlers: CallSettlers<MultiRateLimitDecision>,
  ): void {
    const call: AllowCall = { keys, rules, nowMs, member, maxClockSkewMs: this.maxClockSkewMs };
    if (cost !== 1) call.cost = cost;
    if (this.readOverrides && version.contract.overrides) call.overrides = true;
    this.batcher.decide(version, call, settlers);
  }
}
