import type { RateLimitDecision } from '../core/decisions';

/** How often, at most, one shadow limit's would-be refusals are logged. */
export const SHADOW_LOG_INTERVAL_MS = 60_000;

interface ShadowTally {
  /** Would-be refusals since the last line. */
  wouldRefuse: number;
  /** When the last line about this limit was written, epoch ms (0: never). */
  loggedAt: number;
}

/**
 * The sampled log of shadow limits: when one would have refused a request, a line — at most one per
 * limit per interval, with the count since the last — says so, so a trial shows in the logs without
 * a line per request. Metrics carry every count (`sliding_limit_limit_decisions_total`).
 */
export class ShadowReport {
  private readonly tallies = new Map<string, ShadowTally>();

  constructor(
    private readonly log: (line: string) => void,
    private readonly clock: () => number = Date.now,
    private readonly intervalMs = SHADOW_LOG_INTERVAL_MS,
  ) {}

  /** Notes the shadow limits of one decision; `names[i]` names `decisions[i]`. */
  note(route: string, names: readonly { readonly name: string }[], decisions: readonly RateLimitDecision[]): void {
    for (let i = 0; i < decisions.length; i++) {
      if (decisions[i].wouldRefuse !== true) continue;
      const name = names[i].name;
      let tally = this.tallies.get(name);
      if (!tally) this.tallies.set(name, (tally = { wouldRefuse: 0, loggedAt: 0 }));
      tally.wouldRefuse++;
      const now = this.clock();
      if (now - tally.loggedAt < this.intervalMs) continue;
      const since = tally.loggedAt === 0 ? '' : ` in the last ${Math.round((now - tally.loggedAt) / 1000)} s`;
      this.log(
        `shadow limit "${name}" (${decisions[i].limit} per window) would have refused ${tally.wouldRefuse} ` +
          `request${tally.wouldRefuse === 1 ? '' : 's'}${since}, the latest on ${route}; admitted, as a shadow limit ` +
          "never refuses (promote it with mode: 'enforced')",
      );
      tally.wouldRefuse = 0;
      tally.loggedAt = now;
    }
  }
}
