/*
 * A Redis that stops answering without closing its connection: `kill -STOP` on a redis-server of
 * this file's own, under traffic, then `kill -CONT`. The socket stays open, so ioredis keeps sending
 * and nothing but the limiter's own timeout and circuit breaker stands between the application and a
 * server that never replies.
 */
import Redis from 'ioredis';
import { SlidingWindowLimiter } from '../../../lib';
import { RecordingRedis } from '../../support/recording-redis';
import { RedisServer, startRedisServer } from '../../support/redis-server';
import { startTraffic, type TrafficCall } from '../../support/traffic';
import { waitUntil } from '../../support/wait-for';
import { commandStats } from '../../support/redis-inspect';
import { LIMITER_DEFAULTS } from '../../../lib/limiter/limiter-options';

/** The limiter's default timeout: what bounds a wait on the frozen server is what this file tests. */
const TIMEOUT_MS = LIMITER_DEFAULTS.timeoutMs;
/** How long the circuit breaker stays open (BREAKER_COOLDOWN_MS in sliding-window.limiter.ts). */
const COOLDOWN_MS = 1000;
/**
 * Scheduling slack on a loaded two-core host (two CPU-bound processes beside the suite): the timer
 * that ends an attempt fires late, and so does the reply's callback. Still less than the freeze, so
 * a call that waited for SIGCONT fails the bounds.
 */
const SLACK_MS = 600;
/** How long the server stays frozen at least. */
const FROZEN_MS = 2500;

describe('a frozen Redis (SIGSTOP) under traffic', () => {
  let server: RedisServer;
  let client: RecordingRedis;
  let admin: Redis | undefined;

  beforeAll(async () => {
    server = await startRedisServer();
    client = new RecordingRedis(server.url);
    client.on('error', () => undefined);
  });
  afterAll(async () => {
    if (server?.process.signalCode === null) server.process.kill('SIGCONT');
    await admin?.quit();
    await client?.quit();
    await server?.stop();
  });

  it.each([false, true])(
    'batch %s: answers by policy within 2.5 × timeoutMs (two attempts, each timed out within 1.25 × timeoutMs), then fails fast behind the breaker, holds a bounded number of commands, logs once, and never counts a retry twice',
    async (batch) => {
      const warnings: string[] = [];
      const logs: string[] = [];
      await client.flushall();
      await client.config('RESETSTAT');
      const limiter = new SlidingWindowLimiter({
        client,
        keyPrefix: 'rl:',
        batch,
        logger: { warn: (m) => warnings.push(m), log: (m) => logs.push(m) },
      });
      await limiter.init();
      client.clear();
      const keys = Array.from({ length: 20 }, (_, i) => `frozen:${i}`);
      const concurrency = 16;

      const traffic = startTraffic(limiter, keys, { concurrency, pauseMs: 2, now: () => performance.now() });
      // Commands ioredis has written and still waits a reply for, plus any it holds back offline.
      const held: { at: number; count: number }[] = [];
      const sampler = setInterval(() => {
        const offline = (client as unknown as { offlineQueue: { length: number } }).offlineQueue.length;
        held.push({ at: performance.now(), count: client.commandQueue.length + offline });
      }, 20);

      const isDecided = (call: TrafficCall) => call.degraded === undefined && call.error === undefined;
      await traffic.moreCalls(150, { which: isDecided });
      const frozenAt = performance.now();
      server.process.kill('SIGSTOP');
      // Frozen for FROZEN_MS, and until the breaker has answered plenty of calls at once.
      await waitUntil(
        () => performance.now() - frozenAt >= FROZEN_MS && traffic.calls.filter((call) => call.degraded).length > 800,
        { timeoutMs: 20_000, intervalMs: 10 },
      );
      const resumedAt = performance.now();
      server.process.kill('SIGCONT');
      // Redis decides again: wait for 150 of its decisions after the last degraded one.
      await waitUntil(
        () => {
          const lastDegraded = Math.max(
            0,
            ...traffic.calls.filter((call) => call.degraded).map((call) => call.endedAt),
          );
          return traffic.calls.filter((call) => isDecided(call) && call.startedAt > lastDegraded).length > 150;
        },
        { timeoutMs: 20_000, intervalMs: 20 },
      );
      const calls = await traffic.stop();
      clearInterval(sampler);

      const latency = (call: TrafficCall) => call.endedAt - call.startedAt;
      const degraded = calls.filter((call) => call.degraded !== undefined);
      const decided = calls.filter(isDecided);
      expect(calls.filter((call) => call.error !== undefined)).toEqual([]);
      expect(decided.filter((call) => call.endedAt < frozenAt).length).toBeGreaterThan(100);
      expect(degraded.length).toBeGreaterThan(100);
      expect(degraded.every((call) => call.allowed && call.degraded === 'allow')).toBe(true);

      // 1. Nobody waits on the frozen server longer than two attempts.
      const slowest = Math.max(...calls.map(latency));
      expect(slowest).toBeLessThan(2.5 * TIMEOUT_MS + SLACK_MS);

      // 2. Once the breaker is open, calls return at once; only the breaker's probes (one per
      //    cool-down) and the calls in flight at the freeze wait on Redis.
      const waited = degraded.filter((call) => latency(call) >= TIMEOUT_MS);
      const openedAt = Math.min(...waited.map((call) => call.endedAt));
      const whileOpen = degraded.filter((call) => call.startedAt > openedAt && call.endedAt < resumedAt);
      const probes = whileOpen.filter((call) => latency(call) >= TIMEOUT_MS);
      const fast = whileOpen
        .filter((call) => latency(call) < TIMEOUT_MS)
        .map(latency)
        .sort((a, b) => a - b);
      expect(fast.length).toBeGreaterThan(500);
      expect(probes.length).toBeLessThanOrEqual(Math.ceil((resumedAt - openedAt) / COOLDOWN_MS));
      // Answered without a call to Redis: a fraction of one attempt's timeout (a few ms when idle).
      const p99 = fast[Math.floor(fast.length * 0.99)];
      expect(p99).toBeLessThan(TIMEOUT_MS / 5);
      const inFlightAtFreeze = degraded.filter(
        (call) => call.startedAt <= frozenAt + 1 && latency(call) >= TIMEOUT_MS,
      ).length;
      expect(inFlightAtFreeze).toBeLessThanOrEqual(concurrency);

      // 3. The commands ioredis holds stay bounded: at most two attempts per call that was in flight
      //    at the freeze or was a probe (and the limiter's periodic report), however many calls were made.
      const during = held
        .filter((sample) => sample.at > frozenAt && sample.at < resumedAt)
        .map((sample) => sample.count);
      const maxHeld = Math.max(...during);
      expect(maxHeld).toBeLessThanOrEqual(2 * (concurrency + probes.length) + 2);
      expect(maxHeld).toBeLessThan(whileOpen.length / 10);
      expect(client.commandQueue.length).toBe(0);

      // 4. One warning for the whole outage (no summary yet: it lasted less than the 10 s interval),
      //    and one line when Redis decides again.
      expect(warnings.filter((warning) => warning.includes('did not decide'))).toHaveLength(1);
      expect(warnings).toHaveLength(1);
      expect(logs.filter((log) => log.includes('decides again'))).toHaveLength(1);

      // 5. Redis decides again after SIGCONT, at the latest when the breaker lets its next probe through.
      const firstDegraded = Math.min(...degraded.map((call) => call.startedAt));
      const lastDegraded = Math.max(...degraded.map((call) => call.endedAt));
      const firstDecidedAfter = Math.min(
        ...decided.filter((call) => call.startedAt > resumedAt).map((call) => call.endedAt),
      );
      process.stdout.write(
        `frozen Redis: ${sec(resumedAt - frozenAt)} s frozen, ${sec(lastDegraded - firstDegraded)} s of degraded decisions ` +
          `(Redis decided again ${sec(firstDecidedAfter - resumedAt)} s after SIGCONT); slowest call ${Math.round(slowest)} ms, ` +
          `fail-fast p50 ${fast[fast.length >> 1].toFixed(2)} ms / p99 ${p99.toFixed(2)} ms over ${fast.length} calls; ` +
          `${probes.length} probes; at most ${maxHeld} commands held by ioredis\n`,
      );
      expect(firstDegraded).toBeGreaterThanOrEqual(frozenAt - 2 * TIMEOUT_MS);
      expect(lastDegraded).toBeLessThan(resumedAt + COOLDOWN_MS + 2.5 * TIMEOUT_MS + SLACK_MS);
      expect(decided.filter((call) => call.startedAt > lastDegraded).length).toBeGreaterThan(100);
      expect(limiter.metrics.snapshot()[0].fallbacks?.allow).toBe(degraded.length);

      // 6. No double counting. Redis executes every command left in the frozen socket once it resumes:
      //    each degraded call that waited (`waited`) sent one or two attempts with ONE member, so it adds
      //    exactly one entry after the fact (v2 answers a repeated member without adding it again);
      //    fail-fast calls sent nothing. So entries = admitted by Redis + waited degraded calls — and
      //    more FCALLs ran than entries they made, which is the retry reusing its member.
      admin = new Redis(server.url);
      const entries = (await Promise.all(keys.map((key) => admin!.zcard(`rl:${key}`)))).reduce((sum, n) => sum + n, 0);
      const admitted = decided.filter((call) => call.allowed).length;
      expect(entries).toBeGreaterThanOrEqual(admitted);
      expect(entries).toBeLessThanOrEqual(admitted + waited.length);
      const fcalls = (await commandStats(admin, 'fcall')).calls;
      process.stdout.write(
        `frozen Redis: ${entries} entries = ${admitted} admitted by Redis + ${entries - admitted} of ${waited.length} degraded calls that reached Redis; ${fcalls} FCALLs for ${decided.length} Redis decisions\n`,
      );
      // One FCALL per decision without batching (with it, a call carries several).
      if (!batch) expect(fcalls - decided.length).toBeGreaterThan(entries - admitted);
      // In both modes, calls were sent again exactly as before (same request ids): there were retries
      // that could have counted twice.
      const retries = client.repeats();
      process.stdout.write(`frozen Redis: ${client.sent.length} calls sent, ${retries} of them retries\n`);
      expect(retries).toBeGreaterThan(0);
      await admin.quit();
      admin = undefined;
      limiter.close();
    },
  );
});

function sec(ms: number): string {
  return (ms / 1000).toFixed(2);
}
