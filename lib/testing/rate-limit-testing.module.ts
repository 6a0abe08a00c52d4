import { Module, type DynamicModule } from '@nestjs/common';
import { RATE_LIMIT_OPTIONS, RATE_LIMIT_RAW_OPTIONS } from '../nest/rate-limit.constants';
import { resolveRateLimitOptions, type ResolvedRateLimitOptions } from '../nest/rate-limit.options';
import { TestClock } from './test-clock';
import { MemoryBackend, RateLimitModule, type RateLimitModuleForRootOptions } from 'nestjs-sliding-limit';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';

/** What an application's options say about where limits are kept and on which clock: what a test replaces. */
const STORE_OPTIONS = new Set(['redis', 'client', 'backend', 'store', 'clock']);

/** `builder` (as a prototype) with a `compile()` that fails when the tested module imports no `RateLimitModule`. */
function failingWhenNotApplied<B extends CompilableTestingModule>(builder: B, applied: () => boolean): B {
  const checked = Object.create(builder) as B;
  checked.compile = async (...args: never[]): Promise<unknown> => {
    // On the object over the builder: what the test set on it later (setLogger, useMocker) is seen.
    const compiled = await builder.compile.apply(checked, args);
    if (applied()) return compiled;
    await (compiled as { close?: () => Promise<void> }).close?.();
    throw new RateLimitConfigError(
      [
        'RateLimitTestingModule.override found no RateLimitModule in the tested module, so nothing would be ' +
          'limited: import RateLimitModule.forRoot(…) or forRootAsync(…) in it, or add ' +
          'RateLimitTestingModule.forRoot() to the test’s imports instead',
      ],
      'RateLimitTestingModule',
    );
  };
  return checked;
}

/** An application's options with the test's store, clock and `testOptions` over them (a non-object as it is). */
function onTestStore(appOptions: unknown, testOptions: object, backend: MemoryBackend, clock: TestClock): unknown {
  if (typeof appOptions !== 'object' || appOptions === null) return appOptions;
  const kept = Object.entries(appOptions).filter(([name]) => !STORE_OPTIONS.has(name));
  return { ...Object.fromEntries(kept), ...testOptions, backend, clock: clock.now };
}

/**
 * Options of {@link RateLimitTestingModule.forRoot}: those of `RateLimitModule.forRoot` without the
 * connection and the clock, which the testing module supplies.
 */
export type RateLimitTestingOptions = Omit<RateLimitModuleForRootOptions, 'redis' | 'client' | 'backend' | 'clock'> & {
  /** Where the {@link TestClock} starts, epoch ms. Default 2025-01-01T00:00:00Z. */
  startTime?: number;
};

/**
 * What {@link RateLimitTestingModule.override} needs of a testing module builder (`Test.createTestingModule(…)`
 * of `@nestjs/testing`), declared here so that this package's types never require `@nestjs/testing`.
 */
export interface OverridableTestingModule<B extends CompilableTestingModule> {
  overrideProvider(token: unknown): {
    useFactory(options: { factory: (...args: never[]) => unknown; inject?: unknown[] }): B;
  };
}

/** What {@link RateLimitTestingModule.override} needs of the builder it gives back: `compile()`. */
export interface CompilableTestingModule {
  compile(...args: never[]): Promise<unknown>;
}

/** What {@link RateLimitTestingModule.override} gives back: the builder, and the test's clock and store. */
export interface RateLimitTestingOverride<B> {
  /** The builder, with the store replaced; its `.compile()` fails when no `RateLimitModule` is imported. */
  builder: B;
  /** The clock the limits run on; `advance()` it instead of waiting. */
  clock: TestClock;
  /** The in-memory store the decisions run in (`keys()`, `entries()`, `pttl()`). */
  backend: MemoryBackend;
}

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
 * Also provides the {@link TestClock} and the `MemoryBackend`; each `forRoot()` starts empty.
 */
@Module({})
export class RateLimitTestingModule {
  /**
   * Tests a whole application that imports `RateLimitModule`: its own options, with only the store
   * and the clock replaced (in memory, a {@link TestClock}), so no Redis connection is ever opened.
   *
   * ```ts
   * const { builder, clock } = RateLimitTestingModule.override(Test.createTestingModule({ imports: [AppModule] }));
   * const app = (await builder.compile()).createNestApplication();
   * ```
   *
   * `options` (those of {@link RateLimitTestingModule.forRoot}) are laid over the application's.
   */
  static override<B extends CompilableTestingModule>(
    builder: OverridableTestingModule<B>,
    options: RateLimitTestingOptions = {},
  ): RateLimitTestingOverride<B> {
    const { startTime, isGlobal: _isGlobal, ...testOptions } = options;
    const clock = new TestClock(startTime);
    const backend = new MemoryBackend({ clock: clock.now });
    let applied = false;
    // The resolved options are replaced, not the raw ones, so the application's own provider of the
    // raw options (forRoot's value, forRootAsync's factory) still runs and is read.
    const overridden = builder.overrideProvider(RATE_LIMIT_OPTIONS).useFactory({
      factory: (appOptions: unknown): ResolvedRateLimitOptions => {
        applied = true;
        return resolveRateLimitOptions(onTestStore(appOptions, testOptions, backend, clock));
      },
      inject: [RATE_LIMIT_RAW_OPTIONS],
    });
    return { builder: failingWhenNotApplied(overridden, () => applied), clock, backend };
  }

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
