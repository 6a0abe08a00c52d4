import { Logger } from '@nestjs/common';
import { CallerPlans } from '../fixtures/transports/caller-plans';
import { useTestApps, type TestApp } from '../support/nest-app';
import { windowSizes } from '../support/test-redis';
import { codesOf, GRAPHQL_SERVERS, postGraphQL, startGraphQLApp } from './graphql-app';
import { callerContext, ContextPlanPolicy, PlanResolver, TwiceGuardedPlanResolver } from './plan.resolvers';

/*
 * Limits as data on resolvers: a policy from DI (the plan of the caller the GraphQL context names)
 * and a function policy give each caller its own limit, resolved once per limited field call; the
 * error and the headers name the caller's limit; shadow limits and candidates never refuse, a
 * candidate counting in keys of its own; a failing policy falls back or is answered RATE_LIMIT_UNAVAILABLE.
 */
describe.each(GRAPHQL_SERVERS)('GqlSlidingLimitGuard with policies and shadow limits on $server', ({ platform }) => {
  const startApp = useTestApps(startGraphQLApp);
  afterEach(() => jest.restoreAllMocks());

  const start = async () => {
    const app = await startApp({
      platform,
      resolvers: [PlanResolver, TwiceGuardedPlanResolver, CallerPlans, ContextPlanPolicy],
      context: callerContext,
      options: { headers: { style: 'both', shadow: true } },
    });
    return { app, plans: app.app.get(CallerPlans) };
  };
  const query = (app: TestApp, field: string, headers: Record<string, string>) =>
    postGraphQL(app, `{ ${field} }`, { headers });
  const queries = async (app: TestApp, field: string, headers: Record<string, string>, count: number) => {
    const replies = [];
    for (let i = 0; i < count; i++) replies.push(await query(app, field, headers));
    return replies;
  };
  const admitted = (replies: { errors: unknown[] }[]) => replies.filter((reply) => reply.errors.length === 0).length;

  it("gives each caller its plan's limit, resolving the policy once per field call, and names it", async () => {
    const { app, plans } = await start();
    plans.plans.set('pro-key', 'pro');
    const free = await queries(app, 'report', { 'x-api-key': 'free-key' }, 3);
    expect(admitted(free)).toBe(2);
    expect(free[0].headers['x-ratelimit-limit']).toBe('2');
    expect(free[0].headers['ratelimit-policy']).toBe('"free";q=2;w=60');
    expect(free[2].errors[0].extensions).toMatchObject({
      code: 'TOO_MANY_REQUESTS',
      limits: ['plan-report'],
      policy: '"free";q=2;w=60',
    });
    expect(plans.lookups).toBe(3);
    const pro = await queries(app, 'report', { 'x-api-key': 'pro-key' }, 2);
    expect(pro[0].headers['x-ratelimit-limit']).toBe('4');
    expect(pro[0].headers['ratelimit-policy']).toBe('"pro";q=4;w=60');
    // Two aliases are two decisions, each with its own resolution: 4 of pro's 4 used.
    const both = await query(app, 'a: report b: report', { 'x-api-key': 'pro-key' });
    expect(both.errors).toEqual([]);
    expect(plans.lookups).toBe(7);
    const over = await query(app, 'report', { 'x-api-key': 'pro-key' });
    expect(over.errors[0].extensions).toMatchObject({ policy: '"pro";q=4;w=60' });

    const gold = await queries(app, 'stated', { 'x-api-key': 'g', 'x-tier': 'gold' }, 4);
    expect(admitted(gold)).toBe(3);
    expect(gold[3].errors[0].extensions).toMatchObject({ policy: '"gold";q=3;w=60' });
    const basic = await queries(app, 'stated', { 'x-api-key': 'b' }, 2);
    expect(basic[1].errors[0].extensions).toMatchObject({ policy: '"basic";q=1;w=60' });
  });

  it('resolves the policy once per field call when the resolver is guarded twice (global and @UseGuards)', async () => {
    const { app, plans } = await start();
    const replies = await queries(app, 'twice', { 'x-api-key': 'twice' }, 3);
    expect(admitted(replies)).toBe(2);
    expect(replies[2].errors[0].extensions).toMatchObject({ policy: '"free";q=2;w=60' });
    expect(plans.lookups).toBe(3);
  });

  it('applies a plan change on the next operation, keeping the history both ways', async () => {
    const { app, plans } = await start();
    const caller = { 'x-api-key': 'mover' };
    expect(admitted(await queries(app, 'report', caller, 3))).toBe(2);
    plans.plans.set('mover', 'pro');
    const upgraded = await queries(app, 'report', caller, 3);
    expect(admitted(upgraded)).toBe(2);
    expect(upgraded[0].headers['x-ratelimit-remaining']).toBe('1');
    plans.plans.set('mover', 'free');
    const down = await query(app, 'report', caller);
    expect(codesOf(down)).toEqual(['TOO_MANY_REQUESTS']);
    expect(down.headers['ratelimit-policy']).toBe('"free";q=2;w=60');
  });

  it('never refuses for a shadow limit or a candidate; the candidate counts in keys of its own', async () => {
    const { app } = await start();
    const caller = { 'x-api-key': 'trial-key' };
    const trial = await queries(app, 'trial', caller, 3);
    expect(admitted(trial)).toBe(3);
    expect(trial.map((reply) => reply.headers['x-ratelimit-shadow'])).toEqual([
      '"trial";q=1;r=0;w=60;would-refuse=?0',
      '"trial";q=1;r=0;w=60;would-refuse=?1',
      '"trial";q=1;r=0;w=60;would-refuse=?1',
    ]);

    const reports = await queries(app, 'report', caller, 3);
    expect(admitted(reports)).toBe(2);
    expect(reports[1].headers['x-ratelimit-shadow']).toBe('"plan-report.candidate";q=1;r=0;w=60;would-refuse=?1');
    expect(reports[2].errors[0].extensions).toMatchObject({ limits: ['plan-report'], policy: '"free";q=2;w=60' });
    const key = (name: string) => `${app.keyPrefix}${name}:{header.x-api-key:trial-key}`;
    expect(await windowSizes([key('plan-report.candidate'), key('plan-report')])).toEqual([1, 2]);
  });

  it('falls back to the limit’s own values when the policy fails, and answers RATE_LIMIT_UNAVAILABLE without them', async () => {
    const { app, plans } = await start();
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    plans.failing = new Error('plan database is down');
    const fallback = await queries(app, 'fallback', { 'x-api-key': 'k' }, 2);
    expect(admitted(fallback)).toBe(1);
    expect(fallback[0].headers['ratelimit-policy']).toBe('"plan-fallback";q=1;w=60');
    const unavailable = await query(app, 'report', { 'x-api-key': 'k' });
    expect(unavailable.errors[0].extensions).toMatchObject({ code: 'RATE_LIMIT_UNAVAILABLE', retryAfter: 1 });
    expect(unavailable.headers['retry-after']).toBe('1');
    const lines = warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('rate-limit policy'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain(
      'PlanResolver.fallback: rate-limit policy ContextPlanPolicy failed (it threw: plan database',
    );
    expect(lines[1]).toContain('PlanResolver.report: rate-limit policy ContextPlanPolicy failed');
    expect(lines[1]).toContain('answered 503');
  });
});
