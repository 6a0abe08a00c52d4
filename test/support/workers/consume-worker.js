'use strict';
// Forked by test/limiter/block-cache-overrides.spec.ts: a limiter of the BUILT package with its default
// options, in a process of its own, as a second application instance.
//
// Protocol (process.send / 'message'):
//   parent -> { type: 'consume', id, key, limit, windowMs }
//   worker -> { type: 'decision', id, decision, blockedLocally }
//   parent -> { type: 'stop' }
const path = require('node:path');
const Redis = require('ioredis');
const { SlidingWindowLimiter } = require(path.resolve(__dirname, '../../../dist/index.js'));

const [url, keyPrefix] = process.argv.slice(2);
const client = new Redis(url, { maxRetriesPerRequest: 0 });
const limiter = new SlidingWindowLimiter({ client, keyPrefix, timeoutMs: 5000, report: false });

process.on('message', async (msg) => {
  try {
    if (msg.type === 'stop') {
      await limiter.close();
      client.disconnect();
      process.exit(0);
    }
    const decision = await limiter.consume(msg.key, { limit: msg.limit, windowMs: msg.windowMs });
    const blockedLocally = limiter.metrics.snapshot()[0]?.blockedLocally ?? 0;
    process.send({ type: 'decision', id: msg.id, decision, blockedLocally });
  } catch (error) {
    process.send({ type: 'failed', id: msg.id, message: String(error && error.stack) });
  }
});
