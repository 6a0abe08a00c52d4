import type { DynamicModule, INestApplication, ModuleMetadata, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { RateLimitModule, type RateLimitModuleOptions } from 'nestjs-sliding-limit';
import { sharedRedisUrl, uniquePrefix } from './test-redis';

/** The HTTP platforms every e2e test runs on. */
export const PLATFORMS = ['express', 'fastify'] as const;
export type Platform = (typeof PLATFORMS)[number];

export interface TestAppOptions {
  platform: Platform;
  controllers?: Type[];
  providers?: ModuleMetadata['providers'];
  imports?: ModuleMetadata['imports'];
  /** Module options merged over `{ redis: <shared>, keyPrefix: <unique> }`; ignored when `rateLimitModule` is given. */
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
  close(): Promise<void>;
}

/** Builds a Nest app on Express or Fastify with the rate-limit module, listening on a free port. */
export async function startTestApp(options: TestAppOptions): Promise<TestApp> {
  const keyPrefix = options.options?.keyPrefix ?? uniquePrefix('nest');
  const rateLimitModule =
    options.rateLimitModule ?? RateLimitModule.forRoot({ redis: sharedRedisUrl(), ...options.options, keyPrefix });
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
  return { app, keyPrefix, http: () => request(server), close: () => app.close() };
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

/** A clock the test moves by hand, for the limiter's `clock` option. */
export function manualClock(start = 1_700_000_000_000): { now: () => number; advance(ms: number): void } {
  let current = start;
  return { now: () => current, advance: (ms) => (current += ms) };
}
