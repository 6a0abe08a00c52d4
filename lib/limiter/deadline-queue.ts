import { RedisUnavailableError } from '../errors/redis-unavailable.error';

interface Pending {
  readonly deadline: number;
  reject?: (error: Error) => void;
}

/**
 * Times out calls that all share one timeout, with a single timer instead of one per call (a timer
 * set and cleared per decision was a measurable share of a decision's client-side cost). Since every
 * call waits the same time, deadlines arrive in the order calls start: the head of the queue is always
 * the next to expire.
 */
export class DeadlineQueue {
  private readonly queue: Pending[] = [];
  private head = 0;
  private timer?: NodeJS.Timeout;

  constructor(private readonly timeoutMs: number) {}

  /** Settles like `promise`, or rejects with a {@link RedisUnavailableError} after the timeout. */
  race<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = { deadline: Date.now() + this.timeoutMs, reject };
      this.queue.push(pending);
      this.timer ??= this.schedule(this.timeoutMs);
      promise.then(
        (value) => {
          pending.reject = undefined;
          resolve(value);
        },
        (error: unknown) => {
          pending.reject = undefined;
          reject(error);
        },
      );
    });
  }

  private schedule(delayMs: number): NodeJS.Timeout {
    const timer = setTimeout(() => this.expire(), delayMs);
    // A pending call keeps the process alive by itself; the timer must not.
    timer.unref();
    return timer;
  }

  private expire(): void {
    this.timer = undefined;
    const now = Date.now();
    while (this.head < this.queue.length) {
      const pending = this.queue[this.head];
      if (pending.reject && pending.deadline > now) break;
      pending.reject?.(new RedisUnavailableError(`Redis did not answer within ${this.timeoutMs} ms`, 'timeout'));
      pending.reject = undefined;
      this.head++;
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
      return;
    }
    if (this.head > 1024) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.timer = this.schedule(Math.max(1, this.queue[this.head].deadline - now));
  }
}
