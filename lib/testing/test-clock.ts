import { describeValue } from '../core/value-checks';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';

/** Where a {@link TestClock} starts unless told otherwise: 2025-01-01T00:00:00Z. */
export const DEFAULT_TEST_START_TIME = Date.UTC(2025, 0, 1);

/**
 * A clock the test moves by hand, in epoch milliseconds, provided by `RateLimitTestingModule`:
 *
 * ```ts
 * const clock = app.get(TestClock);
 * clock.advance(60_000); // the window has passed: the client is admitted again
 * ```
 */
export class TestClock {
  private current: number;

  /** @param startTime epoch ms; default {@link DEFAULT_TEST_START_TIME} */
  constructor(startTime: number = DEFAULT_TEST_START_TIME) {
    this.current = checked(startTime, 'startTime');
  }

  /** The current time, epoch ms. Bound to the instance, so it can be passed around as a function. */
  readonly now = (): number => this.current;

  /** Moves the clock forward by `ms` (≥ 0) and returns the new time. */
  advance(ms: number): number {
    if (!(typeof ms === 'number' && Number.isFinite(ms) && ms >= 0)) {
      throw new RateLimitConfigError(
        [`ms must be a finite number ≥ 0, got ${describeValue(ms)}; use set() to go back`],
        'TestClock.advance',
      );
    }
    this.current += ms;
    return this.current;
  }

  /** Sets the time, forwards or back (a lagging caller: v2 refuses one more than `maxClockSkewMs` behind a key). */
  set(ms: number): void {
    this.current = checked(ms, 'TestClock.set');
  }
}

function checked(ms: unknown, label: string): number {
  if (typeof ms === 'number' && Number.isFinite(ms)) return ms;
  throw new RateLimitConfigError(
    [`${label} must be a finite number of epoch milliseconds, got ${describeValue(ms)}`],
    'TestClock',
  );
}
