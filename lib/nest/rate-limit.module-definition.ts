import { ConfigurableModuleBuilder, type ConfigurableModuleAsyncOptions, type Type } from '@nestjs/common';
import { RATE_LIMIT_RAW_OPTIONS } from './rate-limit.constants';
import { usageController } from './rate-limit-usage.controller';
import type { RateLimitModuleOptions } from './rate-limit.options';

/** Extras of `forRoot` / `forRootAsync` that shape the module rather than the limiter. */
export interface RateLimitModuleExtras {
  /** Make the module global, so its providers can be injected everywhere. Default `true` (not the `global` option). */
  isGlobal?: boolean;
  /**
   * Adds the ready usage endpoint: `true` at `GET /rate_limit`, or `{ path, names }`: the caller's named
   * limits (by default those keyed by its identity), counted against none. Default `false`.
   */
  usage?: boolean | { path?: string; names?: readonly string[] };
}

/** The usage endpoint `usage: true` or `{ path, names }` asks for (the path defaults in usageController). */
function usageControllerOf(usage: true | { path?: string; names?: readonly string[] }): Type {
  const { path, names } = usage === true ? {} : usage;
  return usageController(path, names);
}

/** `forRoot` and `forRootAsync` as the builder makes them; `RateLimitModule` calls them. */
export const { ConfigurableModuleClass: ConfigurableRateLimitModule } =
  new ConfigurableModuleBuilder<RateLimitModuleOptions>({ optionsInjectionToken: RATE_LIMIT_RAW_OPTIONS })
    .setClassMethodName('forRoot')
    .setFactoryMethodName('createRateLimitOptions')
    .setExtras<RateLimitModuleExtras>({ isGlobal: true, usage: false }, (definition, extras) => ({
      ...definition,
      global: extras.isGlobal,
      controllers: extras.usage ? [usageControllerOf(extras.usage)] : [],
    }))
    .build();

/** Arguments of `RateLimitModule.forRoot`. */
export type RateLimitModuleForRootOptions = RateLimitModuleOptions & RateLimitModuleExtras;
/** Arguments of `RateLimitModule.forRootAsync` (`useFactory`, `useClass` or `useExisting`). */
export type RateLimitModuleAsyncOptions = ConfigurableModuleAsyncOptions<
  RateLimitModuleOptions,
  'createRateLimitOptions'
> &
  RateLimitModuleExtras;
/** What a `useClass` / `useExisting` options provider implements. */
export interface RateLimitOptionsFactory {
  createRateLimitOptions(): RateLimitModuleOptions | Promise<RateLimitModuleOptions>;
}
