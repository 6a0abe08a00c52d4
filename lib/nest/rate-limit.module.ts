import {
  Inject,
  Logger,
  Module,
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
import { ConfigurableRateLimitModule } from './rate-limit.module-definition';
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
 * Provides {@link SlidingWindowLimiter} (for limits decided in code) and {@link SlidingLimitGuard}.
 * Module options are validated when the module is created (`NestFactory.create`, `compile()`), and
 * `@SlidingLimit` arguments and the limiter's start-up (functions loaded or verified) during
 * `app.init()`: bad configuration fails start-up, not the first request. A connection the module
 * opened is closed on application shutdown; a `client` passed in is never closed.
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
export class RateLimitModule extends ConfigurableRateLimitModule implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('RateLimitModule');

  constructor(
    private readonly limiter: SlidingWindowLimiter,
    @Inject(RATE_LIMIT_CONNECTION) private readonly connection: RateLimitConnection,
    @Inject(RATE_LIMIT_OPTIONS) private readonly options: ResolvedRateLimitOptions,
    private readonly plans: SlidingLimitPlans,
  ) {
    super();
  }

  /**
   * Runs after the providers' hooks (decorator validation), so `loadFunctions: 'verify'` fails
   * `app.init()`. A Redis that does not answer at start-up stops the application only under
   * `verify`: otherwise it starts, decisions follow `onRedisError` at once (the limiter logs it, and
   * its status and the health check say so), and start-up finishes in the background once Redis
   * answers — a rate limiter must not keep an application down.
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
