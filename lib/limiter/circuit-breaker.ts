/**
 * Stops sending to a Redis that keeps failing, so calls to a dead or frozen server do not pile up
 * (every call would otherwise wait its full timeout, and ioredis would hold each unanswered command).
 * After `threshold` consecutive unavailability failures it opens for `cooldownMs`; then one probe
 * call is let through, and its success closes it again.
 */
export class CircuitBreaker {
  private failures = 0;
  private openUntil = 0;
  private probing = false;

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a call may go to Redis now. In the half-open state only the first caller gets `true`. */
  tryAcquire(): boolean {
    if (this.failures < this.threshold) return true;
    if (this.now() < this.openUntil || this.probing) return false;
    this.probing = true;
    return true;
  }

  /** Whether calls flow normally: neither open nor waiting for a probe's answer. */
  get isClosed(): boolean {
    return this.failures < this.threshold;
  }

  onSuccess(): void {
    this.failures = 0;
    this.probing = false;
  }

  /** Closes the breaker at once, e.g. when the connection reports it is ready again. */
  reset(): void {
    this.onSuccess();
  }

  /**
   * Redis answered a call after the call had given up on it: a frozen server resumed, a slow one
   * caught up. Ends the cool-down, so the next call probes now rather than up to `cooldownMs` later.
   * It does not close the breaker: the probe's answer does, and a Redis still too slow keeps it open.
   */
  onLateAnswer(): void {
    this.openUntil = 0;
  }

  /** `count` > 1 for a call that carried several decisions: each of them failed. */
  onFailure(count = 1): void {
    this.failures += count;
    this.probing = false;
    if (this.failures >= this.threshold) this.openUntil = this.now() + this.cooldownMs;
  }
}
