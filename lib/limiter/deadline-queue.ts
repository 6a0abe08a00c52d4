/** The set a tracked call sits in; delete the callback from it once the call settled. */
export type DeadlineSlot = Set<() => void>;

/** Ticks per timeout: a call times out between 1 and 1 + 1/TICKS_PER_TIMEOUT timeouts after it starts. */
const TICKS_PER_TIMEOUT = 4;
/** One slot per tick of a timeout, the one being filled, and the one being expired. */
const SLOTS = TICKS_PER_TIMEOUT + 2;

/**
 * Times out calls that all share one timeout, with one timer for all of them (a timer set and
 * cleared per decision was a measurable share of a decision's client-side cost). Calls are grouped in
 * slots of a quarter timeout, and each tick expires the slot filled five ticks before, so a call times
 * out between 1 and 1.25 timeouts after it started. A settled call leaves its slot at once, so nothing
 * outlives its call (a queue kept until each deadline made the garbage collector the main cost at high
 * rates).
 */
export class DeadlineQueue {
  private readonly slots: DeadlineSlot[] = Array.from({ length: SLOTS }, () => new Set());
  private current = 0;
  private timer?: NodeJS.Timeout;

  constructor(readonly timeoutMs: number) {}

  /** Calls `onTimeout` once the timeout has passed, unless it is first deleted from the returned slot. */
  track(onTimeout: () => void): DeadlineSlot {
    const slot = this.slots[this.current];
    slot.add(onTimeout);
    if (!this.timer) {
      this.timer = setInterval(() => this.tick(), Math.max(1, Math.ceil(this.timeoutMs / TICKS_PER_TIMEOUT)));
      // A pending call keeps the process alive by itself; the timer must not.
      this.timer.unref();
    }
    return slot;
  }

  private tick(): void {
    this.current = (this.current + 1) % SLOTS;
    // The slot after the new current one was filled TICKS_PER_TIMEOUT + 1 ticks ago.
    const expired = this.slots[(this.current + 1) % SLOTS];
    const callbacks = [...expired];
    expired.clear();
    for (const onTimeout of callbacks) onTimeout();
    if (this.slots.every((slot) => slot.size === 0)) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
