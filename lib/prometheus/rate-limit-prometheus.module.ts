import {
  type ConfigurableModuleAsyncOptions,
  type DynamicModule,
  Inject,
  Injectable,
  Module,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { describeValue, hasMethods } from '../core/value-checks';
import { SlidingWindowLimiter } from 'nestjs-sliding-limit';
import {
  describePrefixProblems,
  registerPrometheusMetrics,
  type PrometheusExport,
  type PrometheusExportOptions,
} from '../metrics/prometheus';
import { exportModuleDefinition } from '../nest/export-module';

const definition = exportModuleDefinition<PrometheusExportOptions, 'createPrometheusOptions'>(
  'RateLimitPrometheus',
  'createPrometheusOptions',
  describePrometheusOptionProblems,
);

/** Arguments of `RateLimitPrometheusModule.forRoot`: `{ registry?, prefix? }`. */
export type RateLimitPrometheusForRootOptions = PrometheusExportOptions;
/** Arguments of `RateLimitPrometheusModule.forRootAsync` (`useFactory`, `useClass` or `useExisting`). */
export type RateLimitPrometheusAsyncOptions = ConfigurableModuleAsyncOptions<
  PrometheusExportOptions,
  'createPrometheusOptions'
>;

/** Problems of the module's options, each naming its option. */
function describePrometheusOptionProblems(options: unknown): string[] {
  if (typeof options !== 'object' || options === null)
    return [`options must be an object, got ${describeValue(options)}`];
  const { registry, prefix, ...unknown } = options as Record<string, unknown>;
  const problems = Object.keys(unknown).map((name) => `unknown option ${name}; known options: registry, prefix`);
  if (registry !== undefined && !hasMethods(registry, 'registerMetric', 'removeSingleMetric', 'metrics'))
    problems.push(`registry must be a prom-client Registry, got ${describeValue(registry)}`);
  if (prefix !== undefined) problems.push(...describePrefixProblems(prefix));
  return problems;
}

/** Registers the limiter's metrics on module init and removes them on destroy (`app.close()`). */
@Injectable()
export class RateLimitPrometheusExport implements OnModuleInit, OnModuleDestroy {
  private readonly options: PrometheusExportOptions;
  private exported?: PrometheusExport;

  constructor(
    private readonly limiter: SlidingWindowLimiter,
    @Inject(definition.OPTIONS) options: PrometheusExportOptions | undefined,
  ) {
    this.options = definition.checked(options);
  }

  /** The metric names registered, empty before init and after destroy. */
  get names(): readonly string[] {
    return this.exported?.names ?? [];
  }

  onModuleInit(): void {
    this.exported ??= registerPrometheusMetrics(this.limiter, this.options);
  }

  onModuleDestroy(): void {
    this.exported?.unregister();
    this.exported = undefined;
  }
}

/**
 * Exports the metrics of the application's `SlidingWindowLimiter` to Prometheus, as
 * {@link registerPrometheusMetrics} does (prom-client's global `register` unless `registry` is given).
 * Serving `/metrics` stays the application's choice: see docs/metrics.md.
 *
 * ```ts
 * imports: [RateLimitModule.forRoot({ redis: 'redis://127.0.0.1:6379' }), RateLimitPrometheusModule.forRoot()]
 * ```
 */
@Module({ providers: [RateLimitPrometheusExport], exports: [RateLimitPrometheusExport] })
export class RateLimitPrometheusModule {
  /** Every option has a default: `forRoot()` is enough. */
  static forRoot(options: RateLimitPrometheusForRootOptions = {}): DynamicModule {
    return definition.forRoot(RateLimitPrometheusModule, options);
  }

  /** The options from a factory or an options class (`useFactory`, `useClass`, `useExisting`). */
  static forRootAsync(options: RateLimitPrometheusAsyncOptions): DynamicModule {
    return definition.forRootAsync(RateLimitPrometheusModule, options);
  }
}
