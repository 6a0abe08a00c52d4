import { Logger } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { RpcSlidingLimitGuard } from 'nestjs-sliding-limit/microservices';
import { CallerPlans } from '../fixtures/transports/caller-plans';
import { PayloadPlanPolicy, PlanOrdersController } from '../fixtures/transports/plan-orders.controllers';
import { RedisOverridesStore } from '../../lib/redis/overrides-store';
import { startHybridApp, type HybridApp } from '../support/hybrid-app';
import { stillClock, testRateLimitModule } from '../support/nest-app';
import { connectShared, uniquePrefix, windowSizes } from '../support/test-redis';

/*
 * Limits as data on message handlers: a policy from DI (the plan of the message's API key) and a
 * function policy give each caller its own limit, resolved once per message; the error the sender
 * gets names the caller's limit; shadow limits and candidates never refuse, a candidate counting in
 * keys of its own; a failing policy falls back or is answered RATE_LIMIT_UNAVAILABLE.
 */
describe('RpcSlidingLimitGuard with policies and shadow limits (TCP)', () => {
  let hybrid: HybridApp | undefined;
  let keyPrefix: string;
  afterEach(async () => {
    await hybrid?.close();
    hybrid = undefined;
    jest.restoreAllMocks();
  });

  /** With `appGuard`, RpcSlidingLimitGuard is also the global guard: the handlers are guarded twice. */
  const start = async ({ appGuard = false } = {}) => {
    keyPrefix = uniquePrefix('rpc-policies');
    hybrid = await startHybridApp({
      imports: [testRateLimitModule({ keyPrefix, global: !appGuard, clock: stillClock })],
      controllers: [PlanOrdersController],
      providers: [
        CallerPlans,
        PayloadPlanPolicy,
        ...(appGuard ? [{ provide: APP_GUARD, useClass: RpcSlidingLimitGuard }] : []),
      ],
      inheritAppConfig: appGuard,
    });
    return { plans: hybrid.app.get(CallerPlans) };
  };

  /** Sends `count` messages one after the other; the reply or the error of each. */
  const send = async (pattern: string, data: object, count = 1) => {
    const outcomes: { reply?: unknown; error?: Record<string, unknown> }[] = [];
    for (let i = 0; i < count; i++) {
      outcomes.push(
        await (hybrid as HybridApp).send(pattern, { ...data, n: i }).then(
          (reply) => ({ reply }),
          (error: Record<string, unknown>) => ({ error }),
        ),
      );
    }
    return outcomes;
  };
  const admitted = (outcomes: { reply?: unknown }[]) => outcomes.filter((outcome) => 'reply' in outcome).length;

  it("gives each caller its plan's limit, resolving the policy once per message, and names it in the error", async () => {
    const { plans } = await start();
    plans.plans.set('pro-key', 'pro');
    const free = await send('nsl.plan.order', { apiKey: 'free-key' }, 3);
    expect(admitted(free)).toBe(2);
    expect(free[2].error).toEqual({
      status: 429,
      code: 'TOO_MANY_REQUESTS',
      message: 'Too Many Requests',
      retryAfter: 60,
      retryAfterMs: expect.any(Number),
      limits: ['plan-orders'],
      policy: '"free";q=2;w=60',
    });
    expect(plans.lookups).toBe(3);
    const pro = await send('nsl.plan.order', { apiKey: 'pro-key' }, 5);
    expect(admitted(pro)).toBe(4);
    expect(pro[4].error).toHaveProperty('policy', '"pro";q=4;w=60');
    expect(plans.lookups).toBe(8);

    const gold = await send('nsl.plan.stated', { apiKey: 'g', tier: 'gold' }, 4);
    expect(admitted(gold)).toBe(3);
    expect(gold[3].error).toHaveProperty('policy', '"gold";q=3;w=60');
    const basic = await send('nsl.plan.stated', { apiKey: 'b' }, 2);
    expect(basic[1].error).toHaveProperty('policy', '"basic";q=1;w=60');
  });

  it('resolves the policy once per message when the handler is guarded twice (global and @UseGuards)', async () => {
    const { plans } = await start({ appGuard: true });
    const free = await send('nsl.plan.order', { apiKey: 'twice' }, 3);
    expect(admitted(free)).toBe(2);
    expect(free[2].error).toHaveProperty('policy', '"free";q=2;w=60');
    expect(plans.lookups).toBe(3);
  });

  it('applies a plan change on the next message, keeping the history both ways', async () => {
    const { plans } = await start();
    const caller = { apiKey: 'mover' };
    expect(admitted(await send('nsl.plan.order', caller, 3))).toBe(2);
    plans.plans.set('mover', 'pro');
    expect(admitted(await send('nsl.plan.order', caller, 3))).toBe(2);
    plans.plans.set('mover', 'free');
    const [down] = await send('nsl.plan.order', caller);
    expect(down.error).toHaveProperty('policy', '"free";q=2;w=60');
  });

  it("names an override's limit, set at runtime, in the next refusal", async () => {
    await start();
    const redis = connectShared();
    try {
      const overrides = new RedisOverridesStore(redis, { keyPrefix });
      await overrides.set('plan-orders:{body.apiKey:vip}', { action: 'limit', limit: 3 }, { ttlMs: 60_000 });
      const orders = await send('nsl.plan.order', { apiKey: 'vip' }, 4);
      expect(admitted(orders)).toBe(3);
      expect(orders[3].error).toHaveProperty('policy', '"free";q=3;w=60');
    } finally {
      await redis.quit();
    }
  });

  it('never refuses for a shadow limit or a candidate; the candidate counts in keys of its own', async () => {
    await start();
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const caller = { apiKey: 'trial-key' };
    expect(admitted(await send('nsl.plan.trial', caller, 3))).toBe(3);
    const lines = log.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('shadow limit'));
    expect(lines).toEqual([
      expect.stringMatching(/^shadow limit "trial" \(1 per window\) would have refused 1 request/),
    ]);

    const orders = await send('nsl.plan.order', caller, 3);
    expect(admitted(orders)).toBe(2);
    expect(orders[2].error).toHaveProperty('limits', ['plan-orders']);
    const key = (name: string) => `${keyPrefix}${name}:{body.apiKey:trial-key}`;
    expect(await windowSizes([key('plan-orders.candidate'), key('plan-orders'), key('trial')])).toEqual([1, 2, 1]);
  });

  it('falls back to the limit’s own values when the policy fails, and answers RATE_LIMIT_UNAVAILABLE without them', async () => {
    const { plans } = await start();
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    plans.failing = new Error('plan database is down');
    const fallback = await send('nsl.plan.fallback', { apiKey: 'k' }, 2);
    expect(admitted(fallback)).toBe(1);
    expect(fallback[1].error).toHaveProperty('policy', '"plan-fallback";q=1;w=60');
    const unavailable = await send('nsl.plan.order', { apiKey: 'k' }, 2);
    expect(unavailable.map((outcome) => outcome.error)).toEqual(
      Array(2).fill({
        status: 503,
        code: 'RATE_LIMIT_UNAVAILABLE',
        message: 'Rate limiting is unavailable; retry shortly',
        retryAfter: 1,
        retryAfterMs: 1000,
      }),
    );
    const lines = warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('rate-limit policy'));
    expect(lines).toEqual([
      expect.stringContaining(
        'PlanOrdersController.fallback: rate-limit policy PayloadPlanPolicy failed (it threw: plan database is down)',
      ),
      expect.stringContaining('PlanOrdersController.order: rate-limit policy PayloadPlanPolicy failed'),
    ]);
    expect(lines[1]).toContain('answered 503');
  });
});
