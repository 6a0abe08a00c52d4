import {
  Inject,
  Logger,
  Module,
  type DynamicModule,
  type CanActivate,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { RedisUnavailableError } from '../core/errors/redis-unavailable.error';
import { APP_FILTER, APP_GUARD, DiscoveryModule, HttpAdapterHost } from '@nestjs/core';
import { closeRateLimitConnection, createRateLimitConnection, type RateLimitConnection } from './rate-limit-connection';
import { SlidingLimitPlans } from './rate-limit-plans';
import { TooManyRequestsFilter } from './too-many-requests.filter';
import { RATE_LIMIT_CONNECTION, RATE_LIMIT_OPTIONS, RATE_LIMIT_RAW_OPTIONS } from './rate-limit.constants';
import {
  ConfigurableRateLimitModule,
  type RateLimitModuleAsyncOptions,
  type RateLimitModuleForRootOptions,
} from './rate-limit.module-definition';
import { resolveRateLimitOptions, type ResolvedRateLimitOptions } from './rate-limit.options';
import { SlidingLimitGuard } from './sliding-limit.guard';
import { GuardCoverageCheck } from './guard-coverage';
import { RateLimitUsage } from './rate-limit-usage';
import { SlidingWindowLimiter } from '../limiter/sliding-window.limiter';

/** Stands in for the guard when `global: false`; Nest needs an APP_GUARD value either way. */
const LET_THROUGH: CanActivate = { canActivate: () => true };

/**
 * Exact sliding-window rate limiting backed by Redis Functions.
 *
 * ```ts
 * RateLimitModule.forRoot({ redis: 'redis://127.0.0.1:6379' })
 * RateLimitModule.forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (c) => ({ … }) })
 * ```
 *
 * Provides {@link SlidingWindowLimiter} and {@link SlidingLimitGuard}. Bad options or `@SlidingLimit`
 * arguments fail start-up, not the first request. A `client` passed in is never closed.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    { provide: RATE_LIMIT_OPTIONS, useFactory: resolveRateLimitOptions, inject: [RATE_LIMIT_RAW_OPTIONS] },
    { provide: RATE_LIMIT_CONNECTION, useFactory: createRateLimitConnection, inject: [RATE_LIMIT_OPTIONS] },
    {
      provide: SlidingWindowLimiter,
      useFactory: (options: ResolvedRateLimitOptions, connection: RateLimitConnection) =>
        new SlidingWindowLimiter({ ...options.limiter, client: connection.client, backend: options.backend }),
      inject: [RATE_LIMIT_OPTIONS, RATE_LIMIT_CONNECTION],
    },
    SlidingLimitPlans,
    SlidingLimitGuard,
    RateLimitUsage,
    GuardCoverageCheck,
    {
      provide: APP_GUARD,
      useFactory: (options: ResolvedRateLimitOptions, guard: SlidingLimitGuard) =>
        options.global ? guard : LET_THROUGH,
      inject: [RATE_LIMIT_OPTIONS, SlidingLimitGuard],
    },
    {
      provide: APP_FILTER,
      useFactory: (options: ResolvedRateLimitOptions, adapterHost: HttpAdapterHost) =>
        new TooManyRequestsFilter(adapterHost, options.errorBody),
      inject: [RATE_LIMIT_OPTIONS, HttpAdapterHost],
    },
  ],
  exports: [
    SlidingWindowLimiter,
    SlidingLimitGuard,
    SlidingLimitPlans,
    RateLimitUsage,
    RATE_LIMIT_OPTIONS,
    RATE_LIMIT_CONNECTION,
  ],
})
export class RateLimitModule implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('RateLimitModule');

  /** @internal */
  constructor(
    private readonly limiter: SlidingWindowLimiter,
    @Inject(RATE_LIMIT_CONNECTION) private readonly connection: RateLimitConnection,
    @Inject(RATE_LIMIT_OPTIONS) private readonly options: ResolvedRateLimitOptions,
    private readonly plans: SlidingLimitPlans,
  ) {}

  /** The module with its options given here. */
  static forRoot(options: RateLimitModuleForRootOptions): DynamicModule {
    return { ...ConfigurableRateLimitModule.forRoot(options), module: RateLimitModule };
  }

  /** The module with its options from a factory or an options class (`useFactory`, `useClass`, `useExisting`). */
  static forRootAsync(options: RateLimitModuleAsyncOptions): DynamicModule {
    return { ...ConfigurableRateLimitModule.forRootAsync(options), module: RateLimitModule };
  }

  /**
   * Starts the limiter: `loadFunctions: 'verify'` fails `app.init()`; otherwise a silent Redis never
   * keeps the application down (decisions follow `onRedisError` until start-up finishes).
   */
  async onModuleInit(): Promise<void> {
    if (this.options.store === 'memory') {
      this.logger.log(
        "Rate limits are kept in this process's memory (store: 'memory'): each instance of the application " +
          'counts on its own, and counts start empty after a restart',
      );
    }
    // limiter.use() refuses a version the routes cannot run on (a cost, precisionMs), naming them.
    this.limiter.addFunctionNeeds(() => this.plans.functionNeeds());
    try {
      await this.limiter.init();
    } catch (error) {
      // The limiter has said so in its log, and keeps trying in the background.
      if (!(error instanceof RedisUnavailableError) || this.options.limiter.loadFunctions === 'verify') throw error;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    // First: it deletes the instance report through the connection closed next.
    await this.limiter.close();
    await closeRateLimitConnection(this.connection);
  }
}
