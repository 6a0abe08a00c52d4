import { ensureBuilt } from './ensure-built';
import { startRedisServer } from './redis-server';

/**
 * Builds dist/ if it is stale, and gives every test file a Redis at process.env.TEST_REDIS_URL: REDIS_URL when set,
 * otherwise a redis-server started for this run and stopped by global-teardown.
 */
export default async function globalSetup(): Promise<void> {
  ensureBuilt();
  if (process.env.REDIS_URL) {
    process.env.TEST_REDIS_URL = process.env.REDIS_URL;
    return;
  }
  const server = await startRedisServer();
  process.env.TEST_REDIS_URL = server.url;
  (globalThis as { __NSL_REDIS__?: { stop(): Promise<void> } }).__NSL_REDIS__ = server;
}
