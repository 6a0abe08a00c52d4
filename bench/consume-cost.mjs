// Measures the cost of one SlidingWindowLimiter.consume against a bare ioredis FCALL of the same
// function on the same Redis, alternating A/B over several rounds (ratios, not absolute times alone).
// Usage: npm run build && node bench/consume-cost.mjs [redis-url]
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const Redis = require('ioredis').default;
const { SlidingWindowLimiter } = require('../dist');

const url = process.argv[2] ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const client = new Redis(url);
const limiter = new SlidingWindowLimiter({ client, keyPrefix: 'bench:consume:' });
await limiter.init();
const rule = { limit: 100, windowMs: 60_000 };
const KEYS = 100_000;
let member = 0;

async function run(label, inFlight, total, call) {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < total) await call(next++ % KEYS);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { label, perSecond: total / seconds, microsPerCall: (seconds * 1e6) / total };
}

const bare = (i) => client.fcall('sliding_allow_v2', 1, `bench:consume:k${i}`, Date.now(), `b${member++}`, 1000, rule.windowMs, rule.limit);
const ours = (i) => limiter.consume(`k${i}`, rule);

for (const [inFlight, total] of [[1, 5_000], [64, 60_000]]) {
  const ratios = [];
  for (let round = 0; round < 3; round++) {
    const a = await run('bare fcall', inFlight, total, bare);
    const b = await run('consume()', inFlight, total, ours);
    ratios.push(b.perSecond / a.perSecond);
    console.log(`in flight ${inFlight}, round ${round + 1}: bare ${a.perSecond.toFixed(0)}/s (${a.microsPerCall.toFixed(1)} µs), consume ${b.perSecond.toFixed(0)}/s (${b.microsPerCall.toFixed(1)} µs)`);
  }
  ratios.sort();
  console.log(`in flight ${inFlight}: consume/bare median ${ratios[1].toFixed(3)} (min ${ratios[0].toFixed(3)}, max ${ratios[2].toFixed(3)})`);
}
let cursor = '0';
do {
  const [nextCursor, keys] = await client.scan(cursor, 'MATCH', 'bench:consume:*', 'COUNT', 1000);
  if (keys.length) await client.unlink(...keys);
  cursor = nextCursor;
} while (cursor !== '0');
await client.quit();
