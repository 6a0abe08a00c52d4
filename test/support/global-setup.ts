import Redis from 'ioredis';
import { readServerInfo } from '../../lib/redis/server-info';
import { ensureBuilt } from './ensure-built';
import { startRedisServer } from './redis-server';
import { serverBinaries, testServerKind } from './test-server';

/**
 * Builds dist/ if it is stale, and gives every test file a Redis at process.env.TEST_REDIS_URL: REDIS_URL when set,
 * otherwise a redis-server started for this run and stopped by global-teardown.
 *
 * With TEST_SERVER=valkey, finds (or builds) valkey-server first and exports its path to the test
 * workers, and checks that the shared server really is Valkey: a slice that meant to test Valkey must
 * fail, never pass on Redis.
 */
export default async function globalSetup(): Promise<void> {
  ensureBuilt();
  const binaries = serverBinaries();
  if (binaries.kind === 'valkey') {
    process.env.VALKEY_SERVER = binaries.server;
    process.env.VALKEY_CLI = binaries.cli;
  }
  if (process.env.REDIS_URL) {
    process.env.TEST_REDIS_URL = process.env.REDIS_URL;
    if (testServerKind() === 'valkey') await expectValkey(process.env.TEST_REDIS_URL, binaries.server);
    return;
  }
  const server = await startRedisServer();
  process.env.TEST_REDIS_URL = server.url;
  try {
    if (testServerKind() === 'valkey') await expectValkey(server.url, binaries.server);
  } catch (error) {
    // Global teardown does not run when setup fails.
    await server.stop();
    throw error;
  }
  (globalThis as { __NSL_REDIS__?: { stop(): Promise<void> } }).__NSL_REDIS__ = server;
}

async function expectValkey(url: string, binary: string): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await client.connect();
    const server = await readServerInfo(client);
    if (server.name !== 'valkey') {
      const source = process.env.REDIS_URL ? `REDIS_URL (${url})` : binary;
      throw new Error(`TEST_SERVER=valkey, but ${source} is ${server.name} ${server.version}, not Valkey`);
    }
    process.stderr.write(`TEST_SERVER=valkey: the suite runs on valkey ${server.version} (${binary})\n`);
  } finally {
    client.disconnect();
  }
}
