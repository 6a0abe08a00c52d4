import type { CallOutcome, LimitOutcome } from '../core/function-contract';
import { callGroups } from './call-groups';
import type { NowMs } from './clock';
import { DecisionBatcher } from './decision-batcher';
import type { ActiveVersion } from './function-routing';
import type { DecisionChannel } from './decision-channel';
import type { MemberIdSource } from './member-ids';
import type { SlidingLimitRule } from '../core/limit-rule';

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
  ) {
    this.batcher = new DecisionBatcher(channel, maxBatchSize);
  }

  decide(
    version: ActiveVersion,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    nowMs: NowMs,
  ): Promise<CallOutcome> {
    const member = this.members.next();
    // The common case, one call, without building groups.
    if (keys.length === 1) return this.once(version, keys, rules, nowMs, member);
    const groups = callGroups(keys, version.contract.multiKey, this.channel.clustered);
    if (groups.length === 1) return this.once(version, keys, rules, nowMs, member);
    return this.inGroups(version, keys, rules, nowMs, member, groups);
  }

  private async inGroups(
    version: ActiveVersion,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    nowMs: NowMs,
    member: string,
    groups: number[][],
  ): Promise<CallOutcome> {
    const outcomes = await Promise.all(
      groups.map((group) =>
        this.once(
          version,
          group.map((i) => keys[i]),
          group.map((i) => rules[i]),
          nowMs,
          member,
        ),
      ),
    );
    const limits = new Array<LimitOutcome>(keys.length);
    groups.forEach((group, g) => group.forEach((index, j) => (limits[index] = outcomes[g].limits[j])));
    if (outcomes.every((outcome) => outcome.allowed)) return { allowed: true, limits };

    const recorded = groups.filter((_, g) => outcomes[g].allowed).flat();
    await Promise.all(
      recorded.map((i) => this.channel.call(() => this.channel.commands.zrem(keys[i], member), keys[i])),
    );
    for (const i of recorded)
      limits[i] = { ...limits[i], count: limits[i].count - 1, remaining: limits[i].remaining + 1 };
    return { allowed: false, limits };
  }

  private once(
    version: ActiveVersion,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    nowMs: NowMs,
    member: string,
  ): Promise<CallOutcome> {
    return this.batcher.decide(version, { keys, rules, nowMs, member, maxClockSkewMs: this.maxClockSkewMs });
  }
}
