import { MemoryBackend } from '../memory/memory-backend';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { FunctionContract } from '../core/function-contract';
import { Decision } from './decision';
import type { DecisionChannel } from './decision-channel';
import { activateVersion, type ActiveVersion } from './function-routing';
import { GroupedDecisions } from './grouped-decisions';
import type { MemberIdSource } from './member-ids';
import type { ClockSource } from './sliding-window-limiter.interfaces';
import type { SlidingLimitRule } from '../core/limit-rule';
import type { RedisCall } from './redis-call-policy';

/** A call to the in-memory store: nothing to time out, retry or break. */
function callInProcess<T>(call: RedisCall<T>): void {
  call.send().then(
    (reply) => {
      let parsed: T;
      try {
        parsed = call.parse(reply);
      } catch (error) {
        return call.reject(error);
      }
      call.resolve(parsed);
    },
    (error: unknown) => call.reject(error),
  );
}

/** The per-process insurance limiter: the reference model on a bounded in-memory store. */
export class Insurance {
  private readonly store: MemoryBackend;
  private readonly decisions: GroupedDecisions;
  /** Versions on the store by allow function name, made on first use. */
  private readonly versions = new Map<string, Promise<ActiveVersion>>();

  constructor(
    maxKeys: number,
    private readonly members: MemberIdSource,
    private readonly maxClockSkewMs: number,
    private readonly clock: ClockSource,
  ) {
    this.store = new MemoryBackend({ maxKeys });
    const channel: DecisionChannel = {
      commands: this.store.commands,
      clustered: false,
      send: callInProcess,
      run: (run) => run(),
      healthy: () => true,
      busy: () => false,
    };
    // Batches save round trips to Redis; in memory there are none to save.
    this.decisions = new GroupedDecisions(channel, 1);
  }

  async decide(
    contract: FunctionContract,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    cost = 1,
  ): Promise<MultiRateLimitDecision> {
    const version = await this.versionOf(contract);
    const decision = new Decision(undefined, keys, rules, cost === 1 ? undefined : { cost });
    // Overrides live in Redis, which the insurance stands in for: it has none to read.
    decision.callWith(version, await version.now(), this.members.next(), this.maxClockSkewMs, false);
    this.decisions.decide(decision);
    return decision.promise as Promise<MultiRateLimitDecision>;
  }

  /** Forgets `key` here too, so that a reset holds while the insurance decides. */
  async reset(key: string): Promise<void> {
    await this.store.commands.del(key);
  }

  private versionOf(contract: FunctionContract): Promise<ActiveVersion> {
    let version = this.versions.get(contract.allowFunction);
    if (!version) {
      version = activateVersion(this.store, contract, this.clock, 'off');
      this.versions.set(contract.allowFunction, version);
    }
    return version;
  }
}
