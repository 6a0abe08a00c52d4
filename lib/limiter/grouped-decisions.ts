import { requestDecision } from '../core/caller-decisions';
import type { MultiRateLimitDecision, RateLimitDecision } from '../core/decisions';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { callGroups } from './call-groups';
import { PromisedDecisionCall, type DecisionCall } from './decision-call';
import { DecisionBatcher } from './decision-batcher';
import type { NowMs } from './clock';
import type { ActiveVersion } from './function-routing';
import type { DecisionChannel } from './decision-channel';
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
   * Decides `call` (its version, keys, rules, time and cost set): the call itself is told the
   * decision (or the error). One group — the common case — goes straight to the batcher as it is.
   */
  decide(call: DecisionCall): void {
    const version = call.version as ActiveVersion;
    call.member = this.members.next();
    call.maxClockSkewMs = this.maxClockSkewMs;
    call.overrides = this.readOverrides && version.contract.full;
    const { keys } = call;
    // The common case, one call, without building groups.
    if (keys.length === 1) return this.batcher.decide(call);
    const groups = callGroups(keys, version.contract.full, this.channel.clustered);
    if (groups.length === 1) return this.batcher.decide(call);
    // A request taken back out of a group is one ZREM of its id: that undoes a log entry of cost 1,
    // not a cost spread over entries or a sub-window's count.
    if (call.cost !== 1 || call.rules.some(isBucketed)) return call.reject(new RateLimitConfigError([SPLIT_WEIGHTED]));
    this.inGroups(call, groups).then(
      (decision) => call.resolve(decision),
      (error: unknown) => call.reject(error),
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
    const call = new PromisedDecisionCall(keys, rules);
    call.version = version;
    call.nowMs = nowMs;
    call.cost = cost;
    this.decide(call);
    return call.promise;
  }

  private async inGroups(call: DecisionCall, groups: number[][]): Promise<MultiRateLimitDecision> {
    const { keys, rules } = call;
    const decisions = await Promise.all(
      groups.map((group) => {
        const part = new PromisedDecisionCall(
          group.map((i) => keys[i]),
          group.map((i) => rules[i]),
        );
        part.version = call.version;
        part.nowMs = call.nowMs;
        part.member = call.member;
        part.maxClockSkewMs = call.maxClockSkewMs;
        part.overrides = call.overrides;
        this.batcher.decide(part);
        return part.promise;
      }),
    );
    const limits = new Array<RateLimitDecision>(keys.length);
    groups.forEach((group, g) => group.forEach((index, j) => (limits[index] = decisions[g].limits[j])));
    const { functionName } = decisions[0];
    if (decisions.every((decision) => decision.allowed)) return requestDecision(true, limits, functionName);

    const recorded = groups.filter((_, g) => decisions[g].allowed).flat();
    await Promise.all(
      recorded.map((i) => this.channel.call(() => this.channel.commands.zrem(keys[i], call.member), keys[i])),
    );
    for (const i of recorded) limits[i] = { ...limits[i], remaining: limits[i].remaining + 1 };
    return requestDecision(false, limits, functionName);
  }
}
