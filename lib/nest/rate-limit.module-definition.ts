import { ConfigurableModuleBuilder, type Type } from '@nestjs/common';
import { RATE_LIMIT_RAW_OPTIONS } from './rate-limit.constants';
import { usageController } from './rate-limit-usage.controller';
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
   * Adds the ready usage endpoint: `true` at `GET /rate_limit`, or `{ path, names }`. It answers the
   * caller's named limits (limit, remaining, used, reset, tier) without counting against any: the
   * limits `names` lists, or by default every named limit keyed by the caller's identity (leaving out
   * those whose keys any caller can name: a body, query or route value alone). See `RateLimitUsage`
   * and docs/limits-as-data.md for exposing it safely. Default `false`.
   */
  usage?: boolean | { path?: string; names?: readonly string[] };
}

/** The usage endpoint `usage: true` or `{ path, names }` asks for (the path defaults in usageController). */
function usageControllerOf(usage: true | { path?: string; names?: readonly string[] }): Type {
  const { path, names } = usage === true ? {} : usage;
  return usageController(path, names);
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
    controllers: extras.usage ? [usageControllerOf(extras.usage)] : [],
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
