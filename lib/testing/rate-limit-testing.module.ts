import { Module, type DynamicModule } from '@nestjs/common';
import { MemoryBackend } from '../memory/memory-backend';
import { RateLimitModule } from '../nest/rate-limit.module';
import type { RateLimitModuleForRootOptions } from '../nest/rate-limit.module-definition';
import { TestClock } from './test-clock';

/**
 * Options of {@link RateLimitTestingModule.forRoot}: those of `RateLimitModule.forRoot` without the
 * connection and the clock, which the testing module supplies.
 */
export type RateLimitTestingOptions = Omit<RateLimitModuleForRootOptions, 'redis' | 'client' | 'backend' | 'clock'> & {
  /** Where the {@link TestClock} starts, epoch ms. Default 2025-01-01T00:00:00Z. */
  startTime?: number;
};

/**
 * `RateLimitModule` for your e2e tests: the same guard, headers, 429s and limiter, deciding in memory
 * with the reference model of the Redis functions (no Redis needed) on a clock the test moves.
 *
 * ```ts
 * const moduleRef = await Test.createTestingModule({
 *   imports: [RateLimitTestingModule.forRoot()],
 *   controllers: [AuthController],
 * }).compile();
 * const app = moduleRef.createNestApplication();
 * await app.init();
 * const clock = app.get(TestClock);
 * // … five logins, the sixth gets 429 …
 * clock.advance(60_000); // a minute later it is admitted again
 * app.get(MemoryBackend).keys(); // ['rl:login:{ip:127.0.0.1}']
 * ```
 *
 * Provides (and exports) the {@link TestClock} and the {@link MemoryBackend}, besides everything
 * `RateLimitModule` provides. Each `forRoot()` call starts with an empty store and its own clock.
 */
@Module({})
export class RateLimitTestingModule {
  static forRoot(options: RateLimitTestingOptions = {}): DynamicModule {
    const { startTime, ...moduleOptions } = options;
    const clock = new TestClock(startTime);
    const backend = new MemoryBackend({ clock: clock.now });
    return {
      module: RateLimitTestingModule,
      global: moduleOptions.isGlobal ?? true,
      imports: [RateLimitModule.forRoot({ ...moduleOptions, backend, clock: clock.now })],
      providers: [
        { provide: TestClock, useValue: clock },
        { provide: MemoryBackend, useValue: backend },
      ],
      exports: [TestClock, MemoryBackend, RateLimitModule],
    };
  }
}
