import { SlidingWindowLimiter, type SlidingWindowLimiterOptions } from '../../lib';

/**
 * The per-call timeout of limiters and apps in tests that are not about timeouts. The limiter's
 * default (250 ms) is a production figure: on a loaded two-core host a reply, or start-up, can take
 * longer, and a test that meant to see Redis decide would see the failure policy decide instead
 * (`degraded: 'allow'`, remaining = limit), or see a timed-out call's retry land in its next test.
 */
export const TEST_TIMEOUT_MS = 5000;

/**
 * What test limiters and test apps start from: no instance report (a timer, and a key left on the
 * shared server, in tests that are not about reports) and {@link TEST_TIMEOUT_MS}. A test about
 * either sets its own value over these.
 */
export const TEST_LIMITER_SETTINGS = { report: false, timeoutMs: TEST_TIMEOUT_MS } as const satisfies Pick<
  SlidingWindowLimiterOptions,
  'report' | 'timeoutMs'
>;

/** A limiter with {@link TEST_LIMITER_SETTINGS} under `options`. */
export function testLimiter(options: SlidingWindowLimiterOptions): SlidingWindowLimiter {
  return new SlidingWindowLimiter({ ...TEST_LIMITER_SETTINGS, ...options });
}

/**
 * A maker of test limiters that closes every limiter it made after each test. Each limiter takes
 * {@link TEST_LIMITER_SETTINGS}, then `defaults()` (read when the limiter is made, so it may name a
 * client set up in `beforeAll`), then the options of the call.
 */
export function useTestLimiters(
  defaults: () => SlidingWindowLimiterOptions = () => ({}),
): (options?: SlidingWindowLimiterOptions) => SlidingWindowLimiter {
  const made: SlidingWindowLimiter[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((limiter) => limiter.close()));
  });
  return (options = {}) => {
    const limiter = testLimiter({ ...defaults(), ...options });
    made.push(limiter);
    return limiter;
  };
}
