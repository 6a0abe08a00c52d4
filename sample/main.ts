import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { SlidingWindowLimiter } from 'nestjs-sliding-limit';
import { AppModule, DEFAULT_REDIS_URL, SAMPLE_IS_FULL } from './app.module';

/** One quick PING, no retries: tells "no Redis" apart from everything else before Nest starts. */
async function redisAnswers(url: string): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL || DEFAULT_REDIS_URL;
  const onRedis = await redisAnswers(redisUrl);
  if (!onRedis) {
    // The sample runs from a fresh clone: without Redis, limits are kept in this process.
    process.env.RATE_LIMIT_STORE = 'memory';
    console.warn(
      `No Redis answered at ${redisUrl}: running on the in-memory store (store: 'memory'), limits per process.\n` +
        'For Redis, start one (redis-server --daemonize yes) or set REDIS_URL, then run `npm run sample` again.',
    );
  }

  const app = await NestFactory.create(AppModule);
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');

  const url = await app.getUrl();
  const limiter = app.get(SlidingWindowLimiter);
  console.log(`Sample listening on ${url}`);
  const where = onRedis ? `Redis ${redisUrl}` : 'in-memory store';
  console.log(
    `${where}; active function ${limiter.functionName} (set RATE_LIMIT_FUNCTION to switch); keys under "${limiter.keyPrefix}"`,
  );
  console.log(
    [
      'Try:',
      `  curl -i -X POST ${url}/auth/login -H 'content-type: application/json' -d '{"username":"demo","password":"demo"}'`,
      '      (5 per minute per IP: the 6th within a minute answers 429 with Retry-After;',
      '       3 wrong passwords for one username lock that username for 15 minutes)',
      `  curl -i -X POST ${url}/sms/code -H 'content-type: application/json' -d '{"phone":"13800000000"}'`,
      `  curl -i -X POST ${url}/orders -H 'x-user-id: 10086'`,
      `  curl -i ${url}/search?q=redis`,
      `  curl -i ${url}/health`,
      ...(SAMPLE_IS_FULL
        ? [
            `  curl -i ${url}/quota/search?q=redis -H 'x-api-key: demo'   # costs 1 of 10,000 per hour`,
            `  curl -i ${url}/quota/export -H 'x-api-key: demo'           # costs 10`,
            `  curl -i ${url}/reports -H 'x-api-key: demo-free'   # free plan: 10 per minute, RateLimit-Policy "free"`,
            `  curl -i ${url}/reports -H 'x-api-key: demo-pro'    # pro plan: 100 per minute`,
            '      (x-ratelimit-shadow: from the 6th request a minute, the 5-per-minute candidate would refuse)',
            `  curl -i -X POST ${url}/api-keys/demo-free/plan -H 'content-type: application/json' -d '{"plan":"pro"}'`,
            "      (the next /reports request of demo-free gets pro's 100, its count kept)",
            `  curl -i ${url}/rate_limit -H 'x-api-key: demo-free'   # its API-key limits and what is left; counts nothing`,
            onRedis
              ? `  npx nestjs-sliding-limit overrides set 'reports:{header.x-api-key:demo-free}' --limit 3 --ttl 10m --note demo` +
                (redisUrl === DEFAULT_REDIS_URL ? '' : ` --url ${redisUrl}`)
              : '  (a per-key override with `npx nestjs-sliding-limit overrides set` needs Redis)',
            ...(onRedis
              ? ['      (the running app applies it to the next request of demo-free: 3 per minute, for 10 minutes)']
              : []),
          ]
        : [
            '  (the /quota, /reports and /api-keys routes need costs, precisionMs and shadow limits: sliding_allow_v2)',
          ]),
    ].join('\n'),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
