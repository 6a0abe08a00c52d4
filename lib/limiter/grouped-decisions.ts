import { requestDecision } from '../core/caller-decisions';
import type { MultiRateLimitDecision, RateLimitDecision } from '../core/decisions';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { isBucketed } from '../core/limit-rule';
import { callGroups } from './call-groups';
import { Decision } from './decision';
import { DecisionBatcher } from './decision-batcher';
import type { DecisionChannel } from './decision-channel';
import type { ActiveVersion } from './function-routing';

const SPLIT_WEIGHTED =
  'stacked limits with a cost or precisionMs must be decided in one call: on a Redis Cluster, give their keys ' +
  'one hash tag (the guard does for limits of one identity)';

/** Sends a decision in as few calls as possible; split, a refusal takes it back out of the other groups. */
export class GroupedDecisions {
  private readonly batcher: DecisionBatcher;

  constructor(
    private readonly channel: DecisionChannel,
    /** 1 turns batching off. */
    maxBatchSize: number,
  ) {
    this.batcher = new DecisionBatcher(channel, maxBatchSize);
  }

  /** Sends `decision` (its call set): the decision itself is told the outcome (or the error). */
  decide(decision: Decision): void {
    const { keys } = decision;
    const version = decision.version as ActiveVersion;
    if (keys.length === 1) return this.batcher.decide(decision);
    const groups = callGroups(keys, version.contract.full, this.channel.clustered);
    if (groups.length === 1) return this.batcher.decide(decision);
    // A request taken back out of a group is one ZREM of its id: that undoes a log entry of cost 1,
    // not a cost spread over entries or a sub-window's count.
    if (decision.cost !== 1 || decision.rules.some(isBucketed)) {
      return decision.reject(new RateLimitConfigError([SPLIT_WEIGHTED]));
    }
    this.inGroups(decision, groups).then(
      (decided) => decision.resolve(decided),
      (error: unknown) => decision.reject(error),
    );
  }

  private async inGroups(decision: Decision, groups: number[][]): Promise<MultiRateLimitDecision> {
    const { keys, rules, version, nowMs, member, maxClockSkewMs, overrides } = decision;
    const decisions = await Promise.all(
      groups.map((group) => {
        const part = new Decision(
          undefined,
          group.map((i) => keys[i]),
          group.map((i) => rules[i]),
          undefined,
        );
        part.callWith(version as ActiveVersion, nowMs, member, maxClockSkewMs, overrides);
        this.batcher.decide(part);
        return part.promise as Promise<MultiRateLimitDecision>;
      }),
    );
    const limits = new Array<RateLimitDecision>(keys.length);
    groups.forEach((group, g) => group.forEach((index, j) => (limits[index] = decisions[g].limits[j])));
    const { functionName } = decisions[0];
    if (decisions.every((decided) => decided.allowed)) return requestDecision(true, limits, functionName);

    const recorded = groups.filter((_, g) => decisions[g].allowed).flat();
    await Promise.all(
      recorded.map((i) => this.channel.run(() => this.channel.commands.zrem(keys[i], member), keys[i])),
    );
    for (const i of recorded) limits[i] = { ...limits[i], remaining: limits[i].remaining + 1 };
    return requestDecision(false, limits, functionName);
  }
}
