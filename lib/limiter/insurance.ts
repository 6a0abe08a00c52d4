import { MemoryBackend } from '../memory/memory-backend';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { FunctionContract } from '../core/function-contract';
import { activateVersion, type ActiveVersion } from './function-routing';
import { GroupedDecisions } from './grouped-decisions';
import type { MemberIdSource } from './member-ids';
import type { ClockSource } from './sliding-window-limiter.interfaces';
import type { SlidingLimitRule } from '../core/limit-rule';
import type { RedisAttempt } from './redis-call-policy';

/** A call to the in-memory store: nothing to time out, retry or break. */
async function callInProcess<T>(attempt: RedisAttempt<T>): Promise<T> {
  if (typeof attempt === 'function') return attempt();
  try {
    return attempt.parse(await attempt.send());
  } finally {
    attempt.done();
  }
}

/**
 * The per-process insurance limiter: the package's reference model of the Lua functions on a bounded
 * in-memory store, deciding with the contract of the version Redis would have used.
 */
export class Insurance {
  private readonly store: MemoryBackend;
  private readonly decisions: GroupedDecisions;
  /** Versions on the store by allow function name, made on first use. */
  private readonly versions = new Map<string, Promise<ActiveVersion>>();

  constructor(
    maxKeys: number,
    members: MemberIdSource,
    maxClockSkewMs: number,
    private readonly clock: ClockSource,
  ) {
    this.store = new MemoryBackend({ maxKeys });
    // Batches save round trips to Redis; in memory there are none to save.
    this.decisions = new GroupedDecisions(
      {
        commands: this.store.commands,
        clustered: false,
        call: callInProcess,
        callInto: (attempt, settlers) => {
          callInProcess(attempt).then(
            (value) => settlers.resolve(value),
            (error: unknown) => settlers.reject(error),
          );
        },
        healthy: () => true,
      },
      members,
      maxClockSkewMs,
      1,
      // Overrides live in Redis, which the insurance stands in for: it has none to read.
      false,
    );
  }

  async decide(
    contract: FunctionContract,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    cost = 1,
  ): Promise<MultiRateLimitDecision> {
    const version = await this.versionOf(contract);
    return this.decisions.decided(version, keys, rules, await version.now(), cost);
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
