import { ConfigurableModuleBuilder } from '@nestjs/common';
import { RATE_LIMIT_RAW_OPTIONS } from './rate-limit.constants';
import { DEFAULT_USAGE_PATH, usageController } from './rate-limit-usage.controller';
import type { RateLimitModuleOptions } from './rate-limit.options';

/** Extras of `forRoot` / `forRootAsync` that shape the module rather than the limiter. */
export interface RateLimitModuleExtras {
  /**
   * Make the module global, so `SlidingWindowLimiter` and `SlidingLimitGuard` can be injected in every
   * module without importing it again. Default `true`. (Unrelated to the `global` option, which
   * registers the guard for every route.)
   */
  isGlobal?: boolean;
  /**
   * Adds the ready usage endpoint: `true` at `GET /rate_limit`, or `{ path }`. It answers the caller's
   * named limits (limit, remaining, used, reset, tier) without counting against any; see
   * `RateLimitUsage` and docs/limits-as-data.md for exposing it safely. Default `false`.
   */
  usage?: boolean | { path?: string };
}

export const {
  ConfigurableModuleClass: ConfigurableRateLimitModule,
  OPTIONS_TYPE: RATE_LIMIT_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: RATE_LIMIT_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RateLimitModuleOptions>({ optionsInjectionToken: RATE_LIMIT_RAW_OPTIONS })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createRateLimitOptions')
  .setExtras<RateLimitModuleExtras>({ isGlobal: true, usage: false }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
    controllers: extras.usage
      ? [usageController((typeof extras.usage === 'object' ? extras.usage.path : undefined) ?? DEFAULT_USAGE_PATH)]
      : [],
  }))
  .build();

/** Arguments of `RateLimitModule.forRoot`. */
export type RateLimitModuleForRootOptions = typeof RATE_LIMIT_OPTIONS_TYPE;
/** Arguments of `RateLimitModule.forRootAsync` (`useFactory`, `useClass` or `useExisting`). */
export type RateLimitModuleAsyncOptions = typeof RATE_LIMIT_ASYNC_OPTIONS_TYPE;
/** What a `useClass` / `useExisting` options provider implements. */
export interface RateLimitOptionsFactory {
  createRateLimitOptions(): RateLimitModuleOptions | Promise<RateLimitModuleOptions>;
}
