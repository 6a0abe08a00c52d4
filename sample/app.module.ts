import { Module, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { DEFAULT_FUNCTION_NAME, RateLimitModule } from 'nestjs-sliding-limit';
import { ApiKeyPlans } from './api-key-plans.service';
import { ApiKeysController } from './api-keys.controller';
import { AuthController } from './auth.controller';
import { FakeAuthMiddleware } from './fake-auth.middleware';
import { HealthController } from './health.controller';
import { LoginAttemptsService } from './login-attempts.service';
import { OrdersController } from './orders.controller';
import { PlanPolicy } from './plan.policy';
import { QuotaController } from './quota.controller';
import { ReportsController } from './reports.controller';
import { SearchController } from './search.controller';
import { SmsController } from './sms.controller';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * The function the sample calls: RATE_LIMIT_FUNCTION when set (and not empty), else the package's
 * default. The quota and plan routes use costs, a bounded-memory window and shadow limits; on v1,
 * which has none of them, they are left out, since it would refuse them at start-up.
 */
export const SAMPLE_FUNCTION = process.env.RATE_LIMIT_FUNCTION || DEFAULT_FUNCTION_NAME;
/** Whether the function decides everything a rule can say (costs, bounded windows, shadow limits): not v1. */
export const SAMPLE_IS_FULL = SAMPLE_FUNCTION !== 'sliding_allow_v1';
const FULL_ROUTES = SAMPLE_IS_FULL ? [QuotaController, ReportsController, ApiKeysController] : [];
/**
 * What GET /rate_limit reports: the limits keyed by the caller's API key, of the routes this function
 * version serves. Listed, since the default (every limit keyed by the caller's identity) would also
 * report login, order and search (keyed by IP, by user, and one bucket for everyone). The SMS limits,
 * keyed by a phone number any caller could name, are reported neither way.
 */
const USAGE_NAMES = [...(SAMPLE_IS_FULL ? ['api-quota', 'reports', 'reports.candidate'] : [])];

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true }),
    RateLimitModule.forRootAsync({
      usage: { names: USAGE_NAMES },
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        // main.ts sets RATE_LIMIT_STORE=memory when no Redis answers; an empty REDIS_URL means the default.
        ...(config.get<string>('RATE_LIMIT_STORE') === 'memory'
          ? { store: 'memory' as const }
          : { redis: config.get<string>('REDIS_URL') || DEFAULT_REDIS_URL }),
        // sliding_allow_v1 or _v2: switch versions without a code change (an empty value means unset).
        functionName: config.get<string>('RATE_LIMIT_FUNCTION') || SAMPLE_FUNCTION,
        // Both header styles, and x-ratelimit-shadow on /reports: what its candidate limit would have refused.
        headers: { style: 'both', shadow: true },
      }),
    }),
  ],
  controllers: [AuthController, SmsController, OrdersController, SearchController, HealthController, ...FULL_ROUTES],
  providers: [LoginAttemptsService, ApiKeyPlans, PlanPolicy],
})
export class AppModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(FakeAuthMiddleware).forRoutes(OrdersController);
  }
}
