'use strict';
// Forked by test/concurrency.spec.ts. Plain JS on purpose: it runs the BUILT package from dist/,
// as an application would, in a process of its own.
//
// Protocol (process.send / 'message'):
//   parent -> { type: 'arm', round, url, key, calls, limit, windowMs, precisionMs?, cost?, strategy, functionName,
//               mode, keyPrefix }
//   worker -> { type: 'armed', round }            client connected, limiter initialised, calls not yet sent
//   parent -> { type: 'go', round }               start signal, sent to every worker once all are armed
//   worker -> { type: 'done', round, admitted, rejected, errors, firstSentAt, lastSettledAt }
//   parent -> { type: 'stop' }                    quit every client and exit
//   worker -> { type: 'failed', message }         anything unexpected

const { performance } = require('node:perf_hooks');
const path = require('node:path');
const Redis = require('ioredis');
const { SlidingWindowLimiter } = require(path.resolve(__dirname, '../../../dist/index.js'));

/** One client per URL for the whole life of the worker. */
const clients = new Map();
/** One limiter per configuration, so init() (function or script loading) runs once. */
const limiters = new Map();
let armed;

function clientFor(url) {
  let client = clients.get(url);
  if (!client) {
    client = new Redis(url, { maxRetriesPerRequest: 0 });
    clients.set(url, client);
  }
  return client;
}

async function limiterFor(msg) {
  const id = [msg.url, msg.functionName, msg.mode, msg.keyPrefix].join('|');
  let limiter = limiters.get(id);
  if (!limiter) {
    limiter = new SlidingWindowLimiter({
      client: clientFor(msg.url),
      functionName: msg.functionName,
      mode: msg.mode,
      keyPrefix: msg.keyPrefix,
      loadFunctions: 'auto',
      // The test settings (test/support/test-limiter.ts): 250 calls at once from each of four processes
      // on a loaded two-core host can outwait the default 250 ms, and a degraded decision fails the round.
      timeoutMs: 5000,
      report: false,
    });
    limiters.set(id, limiter);
  }
  await limiter.init();
  return limiter;
}

/** The four steps as separate round trips: what the Lua exists to prevent. */
async function naiveConsume(client, key, limit, windowMs, member) {
  const now = Date.now();
  await client.zremrangebyscore(key, '-inf', now - windowMs);
  const count = await client.zcard(key);
  if (count >= limit) return false;
  await client.zadd(key, now, member);
  await client.pexpire(key, windowMs);
  return true;
}

async function arm(msg) {
  let fire;
  if (msg.strategy === 'naive') {
    const client = clientFor(msg.url);
    await client.ping();
    const fullKey = msg.keyPrefix + msg.key;
    fire = (i) => naiveConsume(client, fullKey, msg.limit, msg.windowMs, `${process.pid}-${msg.round}-${i}`);
  } else {
    const limiter = await limiterFor(msg);
    if (limiter.mode !== msg.mode) throw new Error(`limiter runs in mode ${limiter.mode}, expected ${msg.mode}`);
    const rule = { limit: msg.limit, windowMs: msg.windowMs };
    if (msg.precisionMs !== undefined) rule.precisionMs = msg.precisionMs;
    const options = msg.cost === undefined ? undefined : { cost: msg.cost };
    // A decision Redis did not make (the failure policy's) is a failure here, not an admission.
    fire = () =>
      limiter.consume(msg.key, rule, options).then((decision) => {
        if (decision.degraded) throw new Error(`degraded (${decision.degraded}): Redis did not decide`);
        return decision.allowed;
      });
  }
  armed = { round: msg.round, calls: msg.calls, fire };
  process.send({ type: 'armed', round: msg.round });
}

async function go(msg) {
  if (!armed || armed.round !== msg.round) throw new Error(`go for round ${msg.round} without arming it`);
  const { calls, fire } = armed;
  armed = undefined;
  const firstSentAt = performance.timeOrigin + performance.now();
  const pending = new Array(calls);
  // All calls are issued in the same tick: ioredis writes them back to back on the socket.
  for (let i = 0; i < calls; i++) pending[i] = fire(i);
  const settled = await Promise.allSettled(pending);
  const lastSettledAt = performance.timeOrigin + performance.now();
  let admitted = 0;
  let rejected = 0;
  const errors = [];
  for (const result of settled) {
    if (result.status === 'rejected') errors.push(String(result.reason && result.reason.message));
    else if (result.value === true) admitted++;
    else rejected++;
  }
  process.send({
    type: 'done',
    round: msg.round,
    admitted,
    rejected,
    errors: errors.slice(0, 5),
    errorCount: errors.length,
    firstSentAt,
    lastSettledAt,
  });
}

async function stop() {
  await Promise.all([...clients.values()].map((client) => client.quit().catch(() => client.disconnect())));
  process.disconnect();
}

process.on('message', (msg) => {
  const handler = msg.type === 'arm' ? arm : msg.type === 'go' ? go : msg.type === 'stop' ? stop : undefined;
  if (!handler) return process.send({ type: 'failed', message: `unknown message ${JSON.stringify(msg)}` });
  handler(msg).catch((error) =>
    process.send({ type: 'failed', message: error && error.stack ? error.stack : String(error) }),
  );
});

// The parent went away (test crashed): do not linger.
process.on('disconnect', () => {
  for (const client of clients.values()) client.disconnect();
});
