/** Ticks per timeout: a call times out between 1 and 1 + 1/TICKS_PER_TIMEOUT timeouts after it starts. */
const TICKS_PER_TIMEOUT = 4;
const INITIAL_CAPACITY = 1024;

/** What a call's deadline does: a callback, or an object whose `expire` method is called (no closure per call). */
export type OnTimeout = (() => void) | { expire(): void };

/** Times out calls sharing one timeout with one timer and no allocation per call (a ring buffer by sequence). */
export class DeadlineQueue {
  private callbacks = new Array<OnTimeout | undefined>(INITIAL_CAPACITY);
  private mask = INITIAL_CAPACITY - 1;
  /** Sequence number of the next call. */
  private next = 0;
  /** Every call numbered below this has been expired or had its chance to be. */
  private expiredUpTo = 0;
  /** `next` at each of the last ticks: calls numbered below `tickMarks[0]` are old enough to expire. */
  private readonly tickMarks: number[] = [];
  private timer?: NodeJS.Timeout;

  constructor(readonly timeoutMs: number) {}

  /** Calls `onTimeout` once the timeout has passed, unless the returned number is settled first. */
  track(onTimeout: OnTimeout): number {
    if (this.next - this.expiredUpTo > this.mask) this.grow();
    const seq = this.next++;
    this.callbacks[seq & this.mask] = onTimeout;
    if (!this.timer) {
      this.timer = setInterval(() => this.tick(), Math.max(1, Math.ceil(this.timeoutMs / TICKS_PER_TIMEOUT)));
      // A pending call keeps the process alive by itself; the timer must not.
      this.timer.unref();
    }
    return seq;
  }

  /** The call settled: its deadline no longer matters. */
  settle(seq: number): void {
    if (seq >= this.expiredUpTo) this.callbacks[seq & this.mask] = undefined;
  }

  private tick(): void {
    this.tickMarks.push(this.next);
    if (this.tickMarks.length <= TICKS_PER_TIMEOUT) return;
    const boundary = this.tickMarks.shift() as number;
    for (let seq = this.expiredUpTo; seq < boundary; seq++) {
      const onTimeout = this.callbacks[seq & this.mask];
      this.callbacks[seq & this.mask] = undefined;
      this.expiredUpTo = seq + 1;
      if (typeof onTimeout === 'function') onTimeout();
      else onTimeout?.expire();
    }
    if (this.expiredUpTo === this.next) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.tickMarks.length = 0;
    }
  }

  /** Doubles the ring, keeping every call that may still time out at its place by sequence number. */
  private grow(): void {
    const larger = new Array<OnTimeout | undefined>(this.callbacks.length * 2);
    const mask = larger.length - 1;
    for (let seq = this.expiredUpTo; seq < this.next; seq++) larger[seq & mask] = this.callbacks[seq & this.mask];
    this.callbacks = larger;
    this.mask = mask;
  }
}
