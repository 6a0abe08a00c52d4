import {
  ConfigurableModuleBuilder,
  type DynamicModule,
  Inject,
  Injectable,
  Module,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { SlidingWindowLimiter } from '../limiter/sliding-window.limiter';
import {
  describeInstrumentationOptionProblems,
  instrumentLimiter,
  type LimiterInstrumentation,
  type LimiterInstrumentationOptions,
} from './instrument-limiter';

export const {
  ConfigurableModuleClass: ConfigurableOpenTelemetryModule,
  MODULE_OPTIONS_TOKEN: OPENTELEMETRY_OPTIONS,
  OPTIONS_TYPE: OPENTELEMETRY_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: OPENTELEMETRY_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<LimiterInstrumentationOptions>({ moduleName: 'RateLimitOpenTelemetry' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createOpenTelemetryOptions')
  .build();

/** Arguments of `RateLimitOpenTelemetryModule.forRoot`. */
export type RateLimitOpenTelemetryForRootOptions = typeof OPENTELEMETRY_OPTIONS_TYPE;
/** Arguments of `RateLimitOpenTelemetryModule.forRootAsync` (`useFactory`, `useClass` or `useExisting`). */
export type RateLimitOpenTelemetryAsyncOptions = typeof OPENTELEMETRY_ASYNC_OPTIONS_TYPE;

/**
 * Instruments the application's limiter when the module initialises and stops when it is
 * destroyed (`app.close()`), so a later application in the same process starts clean.
 */
@Injectable()
export class RateLimitInstrumentation implements OnModuleInit, OnModuleDestroy {
  private instrumentation?: LimiterInstrumentation;
  private readonly options: LimiterInstrumentationOptions;

  constructor(
    private readonly limiter: SlidingWindowLimiter,
    @Inject(OPENTELEMETRY_OPTIONS) options: LimiterInstrumentationOptions | undefined,
  ) {
    // Validated when the provider is created, at bootstrap, every problem with its option's name.
    const problems = describeInstrumentationOptionProblems(options ?? {});
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'RateLimitOpenTelemetryModule');
    this.options = options ?? {};
  }

  /** Starts recording: the counters, the histogram and the span attributes. */
  onModuleInit(): void {
    this.instrumentation ??= instrumentLimiter(this.limiter, this.options);
  }

  /** Stops recording. */
  onModuleDestroy(): void {
    this.instrumentation?.close();
    this.instrumentation = undefined;
  }
}

/**
 * Exports the decisions of the application's `SlidingWindowLimiter` (from `RateLimitModule`, global by
 * default) to OpenTelemetry, as {@link instrumentLimiter} does: counters and a latency histogram on the
 * global meter provider (or `meterProvider`), and each decision on the active span.
 *
 * ```ts
 * imports: [RateLimitModule.forRoot({ redis: 'redis://127.0.0.1:6379' }), RateLimitOpenTelemetryModule.forRoot()]
 * ```
 */
@Module({ providers: [RateLimitInstrumentation] })
export class RateLimitOpenTelemetryModule extends ConfigurableOpenTelemetryModule {
  /** Every option has a default: `forRoot()` is enough. */
  static override forRoot(options: RateLimitOpenTelemetryForRootOptions = {}): DynamicModule {
    return super.forRoot(options);
  }
}
