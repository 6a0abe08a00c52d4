/** Says when a route's policy fails, once until it answers again, and what the request got instead. */
export class PolicyFailures {
  /** `route policy` pairs whose failure has been logged and that have not answered since. */
  private readonly failing = new Set<string>();

  constructor(private readonly warn: (line: string) => void) {}

  failed(route: string, policy: string, reason: string, outcome: string): void {
    const id = `${route} ${policy}`;
    if (this.failing.has(id)) return;
    this.failing.add(id);
    this.warn(
      `${route}: rate-limit policy ${policy} failed (${reason}); ${outcome}. ` +
        'Said once until the policy answers again',
    );
  }

  answered(route: string, policy: string): void {
    // Cheap in the common case: the set is empty.
    if (this.failing.size > 0) this.failing.delete(`${route} ${policy}`);
  }
}
