import { Logger } from '@nestjs/common';
import type { Socket } from 'socket.io-client';
import { CallerPlans } from '../fixtures/transports/caller-plans';
import { HandshakePlanPolicy, PlanGateway } from '../fixtures/transports/plan.gateways';
import { call, connectSocketIo } from '../fixtures/transports/socket-io-client';
import { PLATFORMS, stillClock, useTestApps, type TestApp } from '../support/nest-app';
import { windowSizes } from '../support/test-redis';

/*
 * Limits as data on gateway messages: a policy from DI (the plan of the handshake's API key) and a
 * function policy give each caller its own limit, resolved once per message; a refusal names the
 * caller's limit; shadow limits and candidates never refuse, a candidate counting in keys of its own;
 * a failing policy falls back or is answered RATE_LIMIT_UNAVAILABLE.
 */
describe.each(PLATFORMS)('WsSlidingLimitGuard with policies and shadow limits (socket.io on %s)', (platform) => {
  let app: TestApp;
  const sockets: Socket[] = [];
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.disconnect();
    jest.restoreAllMocks();
  });
  const startApp = useTestApps();

  const start = async () => {
    app = await startApp({
      platform,
      providers: [PlanGateway, CallerPlans, HandshakePlanPolicy],
      options: { clock: stillClock },
    });
    return { app, plans: app.app.get(CallerPlans) };
  };
  const connect = (apiKey: string, query?: Record<string, string>) =>
    connectSocketIo(app.app, sockets, { headers: { 'x-api-key': apiKey }, query });

  /** Sends `count` messages one after the other; what each came back as. */
  const send = async (socket: Socket, event: string, count: number) => {
    const outcomes = [];
    for (let i = 0; i < count; i++) outcomes.push(await call(socket, event, i));
    return outcomes;
  };
  const admitted = (outcomes: object[]) => outcomes.filter((outcome) => 'reply' in outcome).length;

  it("gives each caller its plan's limit, resolving the policy once per message, and names it in the refusal", async () => {
    const { plans } = await start();
    plans.plans.set('pro-key', 'pro');
    const free = await send(await connect('free-key'), 'plan', 3);
    expect(admitted(free)).toBe(2);
    expect(free[2]).toEqual({
      exception: {
        status: 429,
        code: 'TOO_MANY_REQUESTS',
        message: 'Too Many Requests',
        retryAfter: 60,
        retryAfterMs: expect.any(Number),
        limits: ['plan-chat'],
        policy: '"free";q=2;w=60',
        event: 'plan',
      },
    });
    expect(plans.lookups).toBe(3);
    const pro = await send(await connect('pro-key'), 'plan', 5);
    expect(admitted(pro)).toBe(4);
    expect(pro[4]).toHaveProperty('exception.policy', '"pro";q=4;w=60');
    expect(plans.lookups).toBe(8);

    const gold = await send(await connect('g', { tier: 'gold' }), 'stated', 4);
    expect(admitted(gold)).toBe(3);
    expect(gold[3]).toHaveProperty('exception.policy', '"gold";q=3;w=60');
    const basic = await send(await connect('b'), 'stated', 2);
    expect(basic[1]).toHaveProperty('exception.policy', '"basic";q=1;w=60');
  });

  it('applies a plan change on the next message, keeping the history both ways', async () => {
    const { plans } = await start();
    const socket = await connect('mover');
    expect(admitted(await send(socket, 'plan', 3))).toBe(2);
    plans.plans.set('mover', 'pro');
    // 2 counted as free: pro's 4 leave room for 2 more.
    expect(admitted(await send(socket, 'plan', 3))).toBe(2);
    plans.plans.set('mover', 'free');
    await expect(call(socket, 'plan', 'down')).resolves.toHaveProperty('exception.policy', '"free";q=2;w=60');
  });

  it('never refuses for a shadow limit or a candidate; the candidate counts in keys of its own', async () => {
    const { app } = await start();
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const socket = await connect('trial-key');
    expect(admitted(await send(socket, 'trial', 3))).toBe(3);
    const lines = log.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('shadow limit'));
    expect(lines).toEqual([
      expect.stringMatching(/^shadow limit "trial" \(1 per window\) would have refused 1 request/),
    ]);

    // The candidate (1 per minute) beside the free plan's 2: the enforced limit alone refuses, and is named.
    const plan = await send(socket, 'plan', 3);
    expect(admitted(plan)).toBe(2);
    expect(plan[2]).toHaveProperty('exception.limits', ['plan-chat']);
    // The candidate recorded what it would have admitted (1), the enforced limit its 2.
    const key = (name: string) => `${app.keyPrefix}${name}:{header.x-api-key:trial-key}`;
    expect(await windowSizes([key('plan-chat.candidate'), key('plan-chat'), key('trial')])).toEqual([1, 2, 1]);
  });

  it('falls back to the limit’s own values when the policy fails, and answers RATE_LIMIT_UNAVAILABLE without them', async () => {
    const { plans } = await start();
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    plans.failing = new Error('plan database is down');
    const socket = await connect('k');
    const fallback = await send(socket, 'fallback', 2);
    expect(admitted(fallback)).toBe(1);
    expect(fallback[1]).toHaveProperty('exception.policy', '"plan-fallback";q=1;w=60');
    const unavailable = await send(socket, 'plan', 2);
    expect(unavailable).toEqual(
      Array(2).fill({
        exception: {
          status: 503,
          code: 'RATE_LIMIT_UNAVAILABLE',
          message: 'Rate limiting is unavailable; retry shortly',
          retryAfter: 1,
          retryAfterMs: 1000,
          event: 'plan',
        },
      }),
    );
    const lines = warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('rate-limit policy'));
    expect(lines).toEqual([
      expect.stringContaining(
        'PlanGateway.fallback: rate-limit policy HandshakePlanPolicy failed (it threw: plan database is down); its limits apply their own values',
      ),
      expect.stringContaining(
        'PlanGateway.plan: rate-limit policy HandshakePlanPolicy failed (it threw: plan database is down); its requests are answered 503',
      ),
    ]);
  });
});
