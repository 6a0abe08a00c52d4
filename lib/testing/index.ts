// nestjs-sliding-limit/testing: decisions in memory on a clock the test moves, with the same guard and limiter.

export {
  RateLimitTestingModule,
  type CompilableTestingModule,
  type OverridableTestingModule,
  type RateLimitTestingOptions,
  type RateLimitTestingOverride,
} from './rate-limit-testing.module';
export { DEFAULT_TEST_START_TIME, TestClock } from './test-clock';
