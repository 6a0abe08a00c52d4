/** Stops calls to a failing Redis: after `threshold` failures it opens for `cooldownMs`, then lets a probe through. */
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

  /** Redis answered a call that had given up on it: the next call probes now (the probe's answer closes it). */
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
