import { ForbiddenException, Injectable, type ExecutionContext } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  MemoryBackend,
  SlidingLimit,
  SlidingLimitGuard,
  SlidingLimitPlans,
  SlidingWindowLimiter,
} from 'nestjs-sliding-limit';
import { AuthController, SmsController } from '../fixtures/limits/limits.controllers';
import { PLATFORMS, startTestApp, type TestApp } from '../support/nest-app';
import { sleep } from '../support/sleep';
import { RateLimitTestingModule } from 'nestjs-sliding-limit/testing';

/*
 * The guard's per-request path runs without async functions: a promise chain, with key functions
 * awaited only when they return a promise. These pin what that must not change: the order keys
 * resolve in, errors as rejections, a request counted once, and headers identical on Express and
 * Fastify.
 */

/** What the stacked key functions below did, in order. */
const events: string[] = [];

/** A key function that resolves after `ms`, recording when it starts and ends. */
const slowKey = (name: string, ms: number) => async (req: { headers?: Record<string, unknown> }) => {
  events.push(`start ${name}`);
  await sleep(ms);
  if (req.headers?.['x-fail'] === name) throw new Error(`key ${name} failed`);
  events.push(`end ${name}`);
  return String(req.headers?.['x-client'] ?? '');
};

@Injectable()
class StackedKeys {
  @SlidingLimit({ name: 'first', limit: 5, windowMs: 60_000, key: slowKey('first', 20) })
  @SlidingLimit({ name: 'template', limit: 5, windowMs: 60_000, key: 'header:x-client' })
  @SlidingLimit({ name: 'second', limit: 5, windowMs: 60_000, key: slowKey('second', 1) })
  handle(): string {
    return 'ok';
  }

  @SlidingLimit({ name: 'by-user', limit: 5, windowMs: 60_000, key: 'user' })
  byUser(): string {
    return 'ok';
  }

  @SlidingLimit({ name: 'client', limit: 5, windowMs: 60_000, key: 'header:x-client' })
  @SlidingLimit({
    name: 'later',
    limit: 5,
    windowMs: 60_000,
    // No value, after a wait: the key falls back to the request's IP, read after the await.
    key: async () => {
      await sleep(10);
      return undefined;
    },
  })
  mixed(): string {
    return 'ok';
  }
}

function httpContext(handler: keyof StackedKeys, request: object): ExecutionContext {
  const host = new ExecutionContextHost(
    [request, undefined, () => undefined],
    StackedKeys,
    StackedKeys.prototype[handler],
  );
  host.setType('http');
  return host;
}

describe('guard path', () => {
  let moduleRef: TestingModule;
  let guard: SlidingLimitGuard;
  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [RateLimitTestingModule.forRoot()],
      providers: [StackedKeys],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    guard = moduleRef.get(SlidingLimitGuard);
    events.length = 0;
  });
  afterEach(() => moduleRef.close());

  it('resolves stacked keys one after the other, in declaration order, whatever mix of functions and templates', async () => {
    await expect(
      guard.canActivate(httpContext('handle', { ip: '10.0.0.1', headers: { 'x-client': 'c1' } })),
    ).resolves.toBe(true);
    // "first" takes longer, yet "second" starts only once it has resolved.
    expect(events).toEqual(['start first', 'end first', 'start second', 'end second']);
    expect(moduleRef.get(MemoryBackend).keys().sort()).toEqual([
      'rl:first:{c1}',
      'rl:second:{c1}',
      'rl:template:{header.x-client:c1}',
    ]);
  });

  it('stops at a key function that fails: later keys are not resolved and nothing is counted', async () => {
    const request = { ip: '10.0.0.1', headers: { 'x-client': 'c2', 'x-fail': 'first' } };
    await expect(guard.canActivate(httpContext('handle', request))).rejects.toThrow('key first failed');
    expect(events).toEqual(['start first']);
    expect(moduleRef.get(MemoryBackend).keys()).toEqual([]);
  });

  it('reports a request it cannot identify as a rejected promise, not a synchronous throw', async () => {
    let answer: Promise<boolean> | undefined;
    expect(() => (answer = guard.canActivate(httpContext('byUser', { headers: {} })))).not.toThrow();
    await expect(answer).rejects.toBeInstanceOf(ForbiddenException);
  });

  it('rejects a key that a subclass hook made empty as consumeAll would, counting nothing', async () => {
    class EmptyKeys extends SlidingLimitGuard {
      protected override resolveKey(): string {
        return '';
      }
    }
    const limiter = moduleRef.get(SlidingWindowLimiter);
    const empty = new EmptyKeys(limiter, moduleRef.get(SlidingLimitPlans));
    const direct = empty.canActivate(httpContext('byUser', { ip: '10.0.0.3', headers: {} }));
    const expected = await limiter.consumeAll([{ key: '', limit: 5, windowMs: 60_000 }]).then(
      () => new Error('consumeAll took an empty key'),
      (error: Error) => error,
    );
    expect(expected.message).toMatch(/key/);
    await expect(direct).rejects.toThrow(expected.message);
    expect(moduleRef.get(MemoryBackend).keys()).toEqual([]);
  });

  it('keys requests in flight together each by their own values, templates and key functions mixed', async () => {
    await Promise.all([
      guard.canActivate(httpContext('mixed', { ip: '10.0.1.1', headers: { 'x-client': 'one' } })),
      guard.canActivate(httpContext('mixed', { ip: '10.0.1.2', headers: { 'x-client': 'two' } })),
    ]);
    expect(moduleRef.get(MemoryBackend).keys().sort()).toEqual([
      'rl:client:{header.x-client:one}',
      'rl:client:{header.x-client:two}',
      'rl:later:{no-key:ip:10.0.1.1}',
      'rl:later:{no-key:ip:10.0.1.2}',
    ]);
  });

  it('counts a call met twice by the same plan once', async () => {
    const request = { ip: '10.0.0.2', headers: { 'x-client': 'c3' } };
    // Nest makes one ExecutionContext per call and hands it to each of the handler's guards in turn.
    const call = httpContext('byUser', request);
    await guard.canActivate(call);
    await guard.canActivate(call);
    // A second instance, as @UseGuards(SlidingLimitGuard) next to the global guard may create.
    const other = new SlidingLimitGuard(moduleRef.get(SlidingWindowLimiter), moduleRef.get(SlidingLimitPlans));
    await other.canActivate(call);
    const fresh = { ip: '10.0.0.2', headers: {} };
    await guard.canActivate(httpContext('byUser', fresh));
    expect(moduleRef.get(MemoryBackend).keys()).toEqual(['rl:by-user:{no-user:ip:10.0.0.2}']);
    // Three guard runs in one call, one in another: two entries in the window.
    await expect(
      moduleRef.get(MemoryBackend).commands.zcount('rl:by-user:{no-user:ip:10.0.0.2}', '-inf', '+inf'),
    ).resolves.toBe(2);
  });
});

describe('headers on Express and Fastify', () => {
  let apps: TestApp[] = [];
  afterEach(async () => {
    await Promise.all(apps.map((app) => app.close()));
    apps = [];
  });

  it('are the same names and values on both platforms, allowed and rejected', async () => {
    const seen: Record<string, unknown[]> = {};
    for (const platform of PLATFORMS) {
      const app = await startTestApp({
        platform,
        controllers: [AuthController, SmsController],
        options: { headers: 'both' },
      });
      apps.push(app);
      const responses = [
        await app.http().post('/sms/code').send({ phone: '5' }),
        await app.http().post('/sms/code').send({ phone: '5' }),
        await app.http().post('/auth/login'),
      ];
      seen[platform] = responses.map((res) => ({
        status: res.status,
        headers: Object.fromEntries(
          Object.entries(res.headers).filter(([name]) => /^(x-ratelimit-|ratelimit|retry-after$)/.test(name)),
        ),
      }));
    }
    const express = seen.express as { status: number; headers: Record<string, string> }[];
    expect(express.map((r) => r.status)).toEqual([201, 429, 201]);
    // Both platforms must send them, not merely agree on sending none.
    expect(Object.keys(express[0].headers).sort()).toEqual([
      'ratelimit',
      'ratelimit-policy',
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
    ]);
    expect(express[1].headers).toHaveProperty('retry-after');
    expect(seen.fastify).toEqual(seen.express);
  });
});
