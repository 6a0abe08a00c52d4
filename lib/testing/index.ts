// The public API of nestjs-sliding-limit/testing: the testing kit. Decisions in memory, on a clock the
// test moves, with the same guard, headers and limiter as on Redis.

export {
  RateLimitTestingModule,
  type CompilableTestingModule,
  type OverridableTestingModule,
  type RateLimitTestingOptions,
  type RateLimitTestingOverride,
} from './rate-limit-testing.module';
export { DEFAULT_TEST_START_TIME, TestClock } from './test-clock';
