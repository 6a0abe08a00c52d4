// The Nest (Express) app of the HTTP section, in a process of its own so that autocannon and the app
// never share an event loop. One minimal route, `GET /`, the same in every configuration:
//   none          no guard
//   ours          RateLimitModule.forRoot({ redis: <url> }) as in the README's quick start (the module
//                 opens its own connection; default options: the default function, override keys read)
//                 + @SlidingLimit; also GET /stacked with two limits, and two reference routes with
//                 @SkipRateLimit() for the latency section: GET /fcall awaits one bare FCALL of the
//                 article's sliding_allow_v1 (the guard's limit and window; its library loaded at start,
//                 as a team calling it by hand would) and GET /ping one PING, each on an ioredis
//                 connection of its own — one Redis round trip, nothing else
//   ours-client   the same with forRoot({ client }): the user's own ioredis client, default options —
//                 the other way into the module, which must cost the same as its own connection
//   nest-lab      @nestjs/throttler + @nest-lab/throttler-storage-redis (ioredis)
//   nestjs-redis  @nestjs/throttler + @nestjs-redis/throttler-storage (node-redis, the client it takes)
// In every configuration GET /skip is the same route with the guard skipped its own way
// (@SkipRateLimit(), @SkipThrottle(); a plain route in none): the route without the guard in the same
// process, which the HTTP section compares each guard with.
// Every limit is keyed by the `x-client-id` header (one per autocannon connection) and high enough
// that nothing is rejected. Reports `{ port }` over IPC once listening on 127.0.0.1; stops on SIGTERM
// or when the parent goes away.
//
// With `guard` as fifth argument there is no HTTP: the app only initialises, reports `{ ready }`, and
// answers each `{ run: n, inFlight }` message by calling the route's guard n times (`inFlight` at a
// time, a new request object and execution context each time, headers set on a stub response) with
// `{ decisions, seconds, cpuSeconds }` — what the guard, its storage and the client cost, without
// Express around them — or with `{ error }` when a call failed: every message gets one reply, so the
// parent never waits for an answer that will not come.
//
// In HTTP mode the app answers each `{ gc: true }` message with `{ gc: { pauseMs, longestMs } }`:
// its garbage-collection pauses since it started (`longestMs`: since the previous such message), so
// the parent can tell a tail the route causes from one the runtime's pauses cause. For app-heap.mjs it
// also answers `{ gcLog: 'start' }` with `{ gcLog: 'started' }` and `{ gcLog: 'stop' }` with
// `{ gcLog: [{ kind, ms }] }`, every pause in between; `{ heapSampling: { samplingInterval } }` with
// `{ heapSampling: 'started' }` and `{ heapSampling: 'stop' }` with `{ heapProfile }`, the sampling heap
// profile's call tree (lib/heap-sampling.mjs), or `{ error }`. Nothing is logged or sampled unasked.
import 'reflect-metadata';
import { createRequire } from 'node:module';
import { PerformanceObserver } from 'node:perf_hooks';
import { BARE_FUNCTION, bareFcall, loadFunction } from './lib/decisions.mjs';
import { heapSampler } from './lib/heap-sampling.mjs';
import { drive } from './lib/measure.mjs';

const require = createRequire(import.meta.url);
const { Controller, Get, Module } = require('@nestjs/common');
const { APP_GUARD, NestFactory } = require('@nestjs/core');
const { ExecutionContextHost } = require('@nestjs/core/helpers/execution-context-host');

const [config, redisPort, limitArg, windowArg, mode = 'http'] = process.argv.slice(2);
const port = Number(redisPort);
const limit = Number(limitArg);
const windowMs = Number(windowArg);
const TRACKER_HEADER = 'x-client-id';

function decorateMethod(target, name, decorators) {
  const descriptor = Object.getOwnPropertyDescriptor(target.prototype, name);
  Object.defineProperty(
    target.prototype,
    name,
    Reflect.decorate(decorators, target.prototype, name, descriptor) ?? descriptor,
  );
}

class BenchController {
  hello() {
    return 'ok';
  }
  stacked() {
    return 'ok';
  }
  // The one-round-trip references (config `ours` only; see the header).
  fcall() {
    return reference.fcall();
  }
  ping() {
    return reference.ping();
  }
  skip() {
    return 'ok';
  }
}

/** The reference routes' Redis work, set up by buildModule for `ours`. */
const reference = {};

const closers = [];
/** The class of the route's guard, for the guard-only mode. */
let guardClass;

async function buildModule() {
  // GET /skip: the route with the configuration's own way of skipping its guard (none has no guard).
  const routeDecorators = { hello: [Get('/')], stacked: [Get('/stacked')], skip: [Get('/skip')] };
  const imports = [];
  const providers = [];

  if (config === 'ours' || config === 'ours-client') {
    // The run's copy of dist/ (see lib/package-snapshot.mjs), or dist/ itself when started by hand.
    const { RateLimitModule, SkipRateLimit, SlidingLimit, SlidingLimitGuard, SlidingWindowLimiter } = require(
      process.env.BENCH_DIST ?? '../dist',
    );
    guardClass = SlidingLimitGuard;
    routeDecorators.skip.push(SkipRateLimit());
    const key = `header:${TRACKER_HEADER}`;
    routeDecorators.hello.push(SlidingLimit({ name: 'bench', limit, windowMs, key }));
    // Two stacked limits on one handler: one atomic call is the target.
    routeDecorators.stacked.push(
      SlidingLimit({ name: 'burst', limit, windowMs, key }),
      SlidingLimit({ name: 'sustained', limit, windowMs: windowMs * 10, key }),
    );
    if (config === 'ours') {
      const Redis = require('ioredis').default;
      const own = new Redis({ host: '127.0.0.1', port });
      closers.push(() => own.quit());
      // The module loads the default function's library only; the bare FCALL's is loaded here.
      await loadFunction(SlidingWindowLimiter, own, BARE_FUNCTION);
      let counter = 0;
      const prefix = `ref:${process.pid}:`;
      // One key, as the latency section's one connection has one x-client-id; the guard's limit and window.
      const rule = { limit, windowMs };
      reference.fcall = () =>
        bareFcall(own, 'ref:fcall', Date.now(), rule, prefix + (counter++).toString(36)).then(() => 'ok');
      reference.ping = () => own.ping().then(() => 'ok');
      routeDecorators.fcall = [Get('/fcall'), SkipRateLimit()];
      routeDecorators.ping = [Get('/ping'), SkipRateLimit()];
      // The module with its default options (no functionName): it closes the connection it opened
      // when the app closes.
      // BENCH_TIMEOUT_MS: the limiter's timeoutMs (app-callgrind.mjs sets it: under valgrind a call
      // can take longer than the default 250 ms, and a retried call is work the other route does not do).
      const timeout = process.env.BENCH_TIMEOUT_MS ? { timeoutMs: Number(process.env.BENCH_TIMEOUT_MS) } : {};
      imports.push(RateLimitModule.forRoot({ redis: `redis://127.0.0.1:${port}`, ...timeout }));
    } else {
      const Redis = require('ioredis').default;
      const client = new Redis({ host: '127.0.0.1', port });
      closers.push(() => client.quit());
      imports.push(RateLimitModule.forRoot({ client }));
    }
  } else if (config === 'nest-lab' || config === 'nestjs-redis') {
    const { SkipThrottle, ThrottlerGuard, ThrottlerModule } = require('@nestjs/throttler');
    routeDecorators.skip.push(SkipThrottle());
    let storage;
    if (config === 'nest-lab') {
      const Redis = require('ioredis').default;
      const { ThrottlerStorageRedisService } = require('@nest-lab/throttler-storage-redis');
      const client = new Redis({ host: '127.0.0.1', port });
      closers.push(() => client.quit());
      storage = new ThrottlerStorageRedisService(client);
    } else {
      const { createClient } = require('redis');
      const { RedisThrottlerStorage } = require('@nestjs-redis/throttler-storage');
      const client = createClient({ socket: { host: '127.0.0.1', port } });
      await client.connect();
      closers.push(() => client.quit());
      storage = new RedisThrottlerStorage(client);
    }
    imports.push(
      ThrottlerModule.forRoot({
        throttlers: [{ limit, ttl: windowMs }],
        storage,
        getTracker: (req) => String(req.headers[TRACKER_HEADER] ?? req.ip),
      }),
    );
    providers.push({ provide: APP_GUARD, useClass: ThrottlerGuard });
    // The APP_GUARD instance cannot be looked up; the guard-only mode uses one of its own.
    if (mode === 'guard') providers.push(ThrottlerGuard);
    guardClass = ThrottlerGuard;
  } else if (config !== 'none') {
    throw new Error(`unknown configuration ${config}`);
  }

  for (const [name, decorators] of Object.entries(routeDecorators)) decorateMethod(BenchController, name, decorators);
  Reflect.decorate([Controller()], BenchController);
  class BenchModule {}
  Reflect.decorate([Module({ imports, controllers: [BenchController], providers })], BenchModule);
  return BenchModule;
}

const app = await NestFactory.create(await buildModule(), { logger: ['error'] });
if (mode === 'guard') {
  await app.init();
  const guard = app.get(guardClass);
  process.on('message', (message) => {
    if (!message?.run) return;
    runGuard(guard, message.run, message.inFlight ?? 50).then(
      (result) => process.send(result),
      (error) => process.send({ error: error instanceof Error ? error.message : String(error) }),
    );
  });
  process.send({ ready: true });
} else {
  const gc = watchGarbageCollection();
  let sampler;
  process.on('message', (message) => {
    if (message?.gc) process.send({ gc: gc.read() });
    else if (message?.gcLog) gc.log(message.gcLog).then((reply) => process.send({ gcLog: reply }));
    else if (message?.heapSampling) {
      sampler ??= heapSampler();
      const reply =
        message.heapSampling === 'stop'
          ? sampler.stop().then((heapProfile) => ({ heapProfile }))
          : sampler.start(message.heapSampling.samplingInterval).then(() => ({ heapSampling: 'started' }));
      reply.then(
        (answer) => process.send(answer),
        (error) => process.send({ error: error instanceof Error ? error.message : String(error) }),
      );
    }
  });
  await app.listen(0, '127.0.0.1');
  process.send({ port: app.getHttpServer().address().port });
}

/**
 * Adds up the main thread's GC pauses as Node reports them (`gc` performance entries); between
 * `log('start')` and `log('stop')` also keeps each pause (`kind`: perf_hooks' NODE_PERFORMANCE_GC_*).
 */
function watchGarbageCollection() {
  const totals = { pauseMs: 0, longestMs: 0 };
  let pauses = null;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      totals.pauseMs += entry.duration;
      totals.longestMs = Math.max(totals.longestMs, entry.duration);
      pauses?.push({ kind: entry.detail.kind, ms: entry.duration });
    }
  }).observe({ entryTypes: ['gc'] });
  return {
    read() {
      const snapshot = { ...totals };
      totals.longestMs = 0;
      return snapshot;
    },
    async log(command) {
      if (command === 'start') {
        pauses = [];
        return 'started';
      }
      // Node reports a pause in an immediate, and that report hands the entry to the observer in
      // another: two turns of the loop's check phase let the last pause's entry in.
      for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
      const logged = pauses ?? [];
      pauses = null;
      return logged;
    },
  };
}

/**
 * Calls the guard of `GET /` `count` times, `inFlight` at a time, as Nest would for a request (one
 * key per concurrent caller, like one per autocannon connection). Bounded in time as well (60 s,
 * half the parent's wait), so a stuck storage still gets an answer back. Nothing should be rejected
 * or throw with a limit nothing reaches: either fails the run instead of being averaged in.
 */
async function runGuard(guard, count, inFlight) {
  const response = {
    setHeader() {},
    header() {
      return this;
    },
  };
  const call = (i) => {
    const request = { headers: { [TRACKER_HEADER]: `c${i % inFlight}` }, ip: '127.0.0.1', method: 'GET', url: '/' };
    const context = new ExecutionContextHost(
      [request, response, () => {}],
      BenchController,
      BenchController.prototype.hello,
    );
    context.setType('http');
    return guard.canActivate(context);
  };
  const cpuBefore = process.cpuUsage();
  // No warm-up inside a run: the parent warms every guard up with a run of its own.
  const r = await drive({ inFlight, warmupMs: 0, durationMs: 60_000, maxOps: count, call });
  const cpu = process.cpuUsage(cpuBefore);
  if (r.errors > 0)
    throw new Error(`${r.errors} of ${r.calls} guard calls failed, first: ${r.firstError?.stack ?? r.firstError}`);
  if (r.rejected > 0)
    throw new Error(
      `${r.rejected} of ${r.calls} guard calls rejected the request (the limit is meant to be out of reach)`,
    );
  return { decisions: r.calls, seconds: r.seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

let closing = false;
async function close() {
  if (closing) return;
  closing = true;
  await app.close();
  for (const closeOne of closers) await closeOne().catch(() => {});
  process.exit(0);
}
process.on('SIGTERM', close);
process.on('SIGINT', close);
process.on('disconnect', close);
