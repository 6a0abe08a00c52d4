import {
  type ConfigurableModuleAsyncOptions,
  type DynamicModule,
  Inject,
  Injectable,
  Module,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { SlidingWindowLimiter } from 'nestjs-sliding-limit';
import {
  describeInstrumentationOptionProblems,
  instrumentLimiter,
  type LimiterInstrumentation,
  type LimiterInstrumentationOptions,
} from './instrument-limiter';
import { exportModuleDefinition } from '../nest/export-module';

const definition = exportModuleDefinition<LimiterInstrumentationOptions, 'createOpenTelemetryOptions'>(
  'RateLimitOpenTelemetry',
  'createOpenTelemetryOptions',
  describeInstrumentationOptionProblems,
);

/** Arguments of `RateLimitOpenTelemetryModule.forRoot`. */
export type RateLimitOpenTelemetryForRootOptions = LimiterInstrumentationOptions;
/** Arguments of `RateLimitOpenTelemetryModule.forRootAsync` (`useFactory`, `useClass` or `useExisting`). */
export type RateLimitOpenTelemetryAsyncOptions = ConfigurableModuleAsyncOptions<
  LimiterInstrumentationOptions,
  'createOpenTelemetryOptions'
>;

/** Instruments the application's limiter on module init, and stops on destroy (`app.close()`). */
@Injectable()
export class RateLimitInstrumentation implements OnModuleInit, OnModuleDestroy {
  private readonly options: LimiterInstrumentationOptions;
  private instrumentation?: LimiterInstrumentation;

  constructor(
    private readonly limiter: SlidingWindowLimiter,
    @Inject(definition.OPTIONS) options: LimiterInstrumentationOptions | undefined,
  ) {
    this.options = definition.checked(options);
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
 * Exports the decisions of the application's `SlidingWindowLimiter` to OpenTelemetry, as
 * {@link instrumentLimiter} does.
 *
 * ```ts
 * imports: [RateLimitModule.forRoot({ redis: 'redis://127.0.0.1:6379' }), RateLimitOpenTelemetryModule.forRoot()]
 * ```
 */
@Module({ providers: [RateLimitInstrumentation] })
export class RateLimitOpenTelemetryModule {
  /** Every option has a default: `forRoot()` is enough. */
  static forRoot(options: RateLimitOpenTelemetryForRootOptions = {}): DynamicModule {
    return definition.forRoot(RateLimitOpenTelemetryModule, options);
  }

  /** The options from a factory or an options class (`useFactory`, `useClass`, `useExisting`). */
  static forRootAsync(options: RateLimitOpenTelemetryAsyncOptions): DynamicModule {
    return definition.forRootAsync(RateLimitOpenTelemetryModule, options);
  }
}
