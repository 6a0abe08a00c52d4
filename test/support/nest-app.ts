import type { DynamicModule, INestApplication, ModuleMetadata, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { RateLimitModule, type RateLimitModuleOptions } from 'nestjs-sliding-limit';
import { TEST_LIMITER_SETTINGS } from './test-limiter';
import { sharedRedisUrl, uniquePrefix } from './test-redis';

/** The HTTP platforms every e2e test runs on. */
export const PLATFORMS = ['express', 'fastify'] as const;
export type Platform = (typeof PLATFORMS)[number];

export interface TestAppOptions {
  platform: Platform;
  controllers?: Type[];
  providers?: ModuleMetadata['providers'];
  imports?: ModuleMetadata['imports'];
  /**
   * Module options merged over `{ redis: <shared>, keyPrefix: <unique> }` and the test settings (no
   * instance report, a timeout of seconds: see TEST_LIMITER_SETTINGS); ignored when `rateLimitModule`
   * is given.
   */
  options?: Partial<RateLimitModuleOptions>;
  /** A ready-made RateLimitModule registration (forRootAsync tests). */
  rateLimitModule?: DynamicModule;
  /** Whether the app trusts X-Forwarded-For from its proxy. */
  trustProxy?: boolean;
}

export interface TestApp {
  app: INestApplication;
  keyPrefix: string;
  /** A supertest agent bound to the listening server. */
  http(): ReturnType<typeof request>;
  /** Closes the app; again, it does nothing more. */
  close(): Promise<void>;
}

/**
 * The rate-limit module on the shared Redis under a unique key prefix, with the test settings (no
 * instance report, a timeout of seconds), `options` over them.
 */
export function testRateLimitModule(
  options: Partial<Parameters<typeof RateLimitModule.forRoot>[0]> = {},
): DynamicModule {
  return RateLimitModule.forRoot({
    redis: sharedRedisUrl(),
    ...TEST_LIMITER_SETTINGS,
    ...options,
    keyPrefix: options.keyPrefix ?? uniquePrefix('nest'),
  });
}

/** Builds a Nest app on Express or Fastify with the rate-limit module, listening on a free port. */
export async function startTestApp(options: TestAppOptions): Promise<TestApp> {
  const keyPrefix = options.options?.keyPrefix ?? uniquePrefix('nest');
  const rateLimitModule = options.rateLimitModule ?? testRateLimitModule({ ...options.options, keyPrefix });
  const moduleRef = await Test.createTestingModule({
    imports: [...(options.imports ?? []), rateLimitModule],
    controllers: options.controllers ?? [],
    providers: options.providers ?? [],
  }).compile();
  const app = createApp(moduleRef, options);
  try {
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    await app.close();
    throw error;
  }
  const server = app.getHttpServer();
  let closed: Promise<void> | undefined;
  return { app, keyPrefix, http: () => request(server), close: () => (closed ??= app.close()) };
}

function createApp(
  moduleRef: Awaited<ReturnType<ReturnType<typeof Test.createTestingModule>['compile']>>,
  options: TestAppOptions,
): INestApplication {
  if (options.platform === 'fastify') {
    return moduleRef.createNestApplication<NestFastifyApplication>(
      new FastifyAdapter({ trustProxy: options.trustProxy ?? false }),
      { logger: false },
    );
  }
  const app = moduleRef.createNestApplication<NestExpressApplication>(new ExpressAdapter(), { logger: false });
  app.set('trust proxy', options.trustProxy ?? false);
  return app;
}

/**
 * A starter of apps for the calling block that closes every app it started after each test: `start`
 * is {@link startTestApp} unless given (a GraphQL app's starter, say).
 */
export function useTestApps(): (options: TestAppOptions) => Promise<TestApp>;
export function useTestApps<O>(start: (options: O) => Promise<TestApp>): (options: O) => Promise<TestApp>;
export function useTestApps(
  start: (options: TestAppOptions) => Promise<TestApp> = startTestApp,
): (options: TestAppOptions) => Promise<TestApp> {
  const started: TestApp[] = [];
  afterEach(async () => {
    for (const app of started.splice(0)) await app.close();
  });
  return async (options) => {
    const app = await start(options);
    started.push(app);
    return app;
  };
}

/**
 * A clock that stands still, for the limiter's `clock` option in specs that assert a refusal's exact
 * wait ("retry after 60 s") on real Redis: on the wall clock, a loaded host taking a second between
 * the first request and the refusal would make it 59.
 */
export function stillClock(): number {
  return 1_700_000_000_000;
}

/** A clock the test moves by hand, for the limiter's `clock` option. */
export function manualClock(start = 1_700_000_000_000): { now: () => number; advance(ms: number): void } {
  let current = start;
  return { now: () => current, advance: (ms) => (current += ms) };
}
