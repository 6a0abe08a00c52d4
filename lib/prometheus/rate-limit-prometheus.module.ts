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
import { describeValue } from '../core/value-checks';
import { SlidingWindowLimiter } from '../limiter/sliding-window.limiter';
import { registerPrometheusMetrics, type PrometheusExport, type PrometheusExportOptions } from '../metrics/prometheus';

export const {
  ConfigurableModuleClass: ConfigurablePrometheusModule,
  MODULE_OPTIONS_TOKEN: PROMETHEUS_OPTIONS,
  OPTIONS_TYPE: PROMETHEUS_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: PROMETHEUS_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<PrometheusExportOptions>({ moduleName: 'RateLimitPrometheus' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createPrometheusOptions')
  .build();

/** Arguments of `RateLimitPrometheusModule.forRoot`: `{ registry?, prefix? }`. */
export type RateLimitPrometheusForRootOptions = typeof PROMETHEUS_OPTIONS_TYPE;
/** Arguments of `RateLimitPrometheusModule.forRootAsync` (`useFactory`, `useClass` or `useExisting`). */
export type RateLimitPrometheusAsyncOptions = typeof PROMETHEUS_ASYNC_OPTIONS_TYPE;

const PREFIX = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** Problems of the module's options, each naming its option. */
function describePrometheusOptionProblems(options: unknown): string[] {
  if (typeof options !== 'object' || options === null)
    return [`options must be an object, got ${describeValue(options)}`];
  const { registry, prefix, ...unknown } = options as Record<string, unknown>;
  const problems = Object.keys(unknown).map((name) => `unknown option ${name}; known options: registry, prefix`);
  const isRegistry =
    typeof registry === 'object' &&
    registry !== null &&
    ['registerMetric', 'removeSingleMetric', 'metrics'].every(
      (method) => typeof (registry as Record<string, unknown>)[method] === 'function',
    );
  if (registry !== undefined && !isRegistry)
    problems.push(`registry must be a prom-client Registry, got ${describeValue(registry)}`);
  if (prefix !== undefined && (typeof prefix !== 'string' || !PREFIX.test(prefix)))
    problems.push(
      `prefix must be a Prometheus metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*), got ${describeValue(prefix)}`,
    );
  return problems;
}

/**
 * Registers the limiter's metrics when the module initialises and removes them when it is destroyed
 * (`app.close()`), so that a new application in the same process (tests, hot reload) can register
 * them again.
 */
@Injectable()
export class RateLimitPrometheusExport implements OnModuleInit, OnModuleDestroy {
  private exported?: PrometheusExport;
  private readonly options: PrometheusExportOptions;

  constructor(
    private readonly limiter: SlidingWindowLimiter,
    @Inject(PROMETHEUS_OPTIONS) options: PrometheusExportOptions | undefined,
  ) {
    // Validated when the provider is created, at bootstrap, every problem with its option's name.
    const problems = describePrometheusOptionProblems(options ?? {});
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'RateLimitPrometheusModule');
    this.options = options ?? {};
  }

  /** The metric names registered, empty before init and after destroy. */
  get names(): readonly string[] {
    return this.exported?.names ?? [];
  }

  /** Registers the metrics (prom-client is loaded here, on first use). */
  onModuleInit(): void {
    this.exported ??= registerPrometheusMetrics(this.limiter, this.options);
  }

  /** Removes the metrics from the registry. */
  onModuleDestroy(): void {
    this.exported?.unregister();
    this.exported = undefined;
  }
}

/**
 * Exports the metrics of the application's `SlidingWindowLimiter` (from `RateLimitModule`, global by
 * default) to Prometheus, as {@link registerPrometheusMetrics} does: on prom-client's global
 * `register` unless `registry` says otherwise, under `prefix` (default `sliding_limit_`). prom-client is
 * an optional peer dependency: `npm i prom-client`. Serving `/metrics` stays the application's choice
 * (a controller, or `@willsoto/nestjs-prometheus`): see docs/metrics.md.
 *
 * ```ts
 * imports: [RateLimitModule.forRoot({ redis: 'redis://127.0.0.1:6379' }), RateLimitPrometheusModule.forRoot()]
 * ```
 */
@Module({ providers: [RateLimitPrometheusExport], exports: [RateLimitPrometheusExport] })
export class RateLimitPrometheusModule extends ConfigurablePrometheusModule {
  /** Every option has a default: `forRoot()` is enough. */
  static override forRoot(options: RateLimitPrometheusForRootOptions = {}): DynamicModule {
    return super.forRoot(options);
  }
}
