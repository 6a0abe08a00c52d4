import { decisionFromOutcomes } from '../../lib/core/caller-decisions';
import type { MultiRateLimitDecision, RateLimitDecision } from '../../lib/core/decisions';
import type { AllowCall, FunctionContract } from '../../lib/core/function-contract';
import type { SlidingLimitRule } from '../../lib/core/limit-rule';
import { decisionReaderOf } from '../../lib/redis/contracts/decision-readers';
import { V1_CONTRACT } from '../../lib/redis/contracts/v1.contract';
import { V2_CONTRACT } from '../../lib/redis/contracts/v2.contract';

/*
 * The decision path's reply readers (decisionReaderOf), which read a reply straight into the
 * caller's decisions: each reply's decision worked out by hand from the header of the version's Lua,
 * and the same as the decision made from the contract's outcomes (parseAllowReply, batch.parseReply,
 * the public form), whatever form the integers arrive in (numbers, strings, bigints).
 * v2 per limit: room, count, remaining, retry_after_ms, reset_ms, limit, override.
 */
describe('decision readers', () => {
  const callOf = (rules: SlidingLimitRule[], cost?: number): AllowCall => ({
    keys: rules.map((_, i) => `rl:{k${i}}`),
    rules,
    nowMs: 1_735_660_800_000,
    member: 'm',
    maxClockSkewMs: 1000,
    cost,
  });

  /** The decision made from the contract's outcomes, as the decision path made it before its readers. */
  const throughOutcomes = (contract: FunctionContract, reply: unknown, call: AllowCall): MultiRateLimitDecision => {
    const { allowed, limits } = contract.parseAllowReply(reply, call.rules, call.cost);
    return decisionFromOutcomes(allowed, limits, call.rules, contract.allowFunction);
  };

  const asStrings = (reply: number[]) => reply.map(String);
  const asBigints = (reply: number[]) => reply.map(BigInt);

  describe('v2', () => {
    const reader = decisionReaderOf(V2_CONTRACT);
    const fn = V2_CONTRACT.allowFunction;
    const call = callOf([
      { limit: 2, windowMs: 10_000 },
      { limit: 1, windowMs: 10_000, precisionMs: 1000, mode: 'shadow' },
      { limit: 5, windowMs: 10_000 },
    ]);
    const decision = (
      allowed: boolean,
      retryAfterMs: number,
      ...limits: Omit<RateLimitDecision, 'functionName'>[]
    ): MultiRateLimitDecision => ({
      allowed,
      retryAfterMs,
      functionName: fn,
      limits: limits.map((limit) => ({ ...limit, functionName: fn })),
    });

    const cases: [string, number[], MultiRateLimitDecision][] = [
      [
        // Admitted; the shadow limit, full, would have refused (its wait is not the request's).
        'admitted under a limit override, a shadow limit that would refuse',
        [1, 1, 1, 2, 0, 9000, 3, 1, 0, 1, 0, 4000, 9999, 1, 0, 1, 1, 4, 0, 9000, 5, 0],
        decision(
          true,
          0,
          { allowed: true, limit: 3, remaining: 2, retryAfterMs: 0, resetMs: 9000, override: 'limit' },
          {
            allowed: false,
            limit: 1,
            remaining: 0,
            retryAfterMs: 4000,
            resetMs: 9999,
            shadow: true,
            wouldRefuse: true,
          },
          { allowed: true, limit: 5, remaining: 4, retryAfterMs: 0, resetMs: 9000 },
        ),
      ],
      [
        // Refused by a block (limit 0, its TTL as the wait); the shadow limit had room but refuses nothing.
        'refused by a block, with an exempt limit',
        [0, 0, 0, 0, 60_000, 0, 0, 3, 1, 0, 1, 0, 0, 1, 0, 1, 0, 5, 0, 0, 5, 2],
        decision(
          false,
          60_000,
          { allowed: false, limit: 0, remaining: 0, retryAfterMs: 60_000, resetMs: 0, override: 'block' },
          { allowed: true, limit: 1, remaining: 1, retryAfterMs: 0, resetMs: 0, shadow: true, wouldRefuse: false },
          { allowed: true, limit: 5, remaining: 5, retryAfterMs: 0, resetMs: 0, override: 'exempt' },
        ),
      ],
      [
        // Refused by a full enforced limit: the shadow limit, full too, would not have refused what
        // the enforced ones refused; the request's wait is the enforced limit's, not the shadow's.
        'refused by a full limit, a shadow limit full too',
        [0, 0, 2, 0, 3000, 9000, 2, 0, 0, 1, 0, 4000, 9999, 1, 0, 1, 1, 4, 0, 9000, 5, 0],
        decision(
          false,
          3000,
          { allowed: false, limit: 2, remaining: 0, retryAfterMs: 3000, resetMs: 9000 },
          {
            allowed: false,
            limit: 1,
            remaining: 0,
            retryAfterMs: 4000,
            resetMs: 9999,
            shadow: true,
            wouldRefuse: false,
          },
          { allowed: true, limit: 5, remaining: 4, retryAfterMs: 0, resetMs: 9000 },
        ),
      ],
      [
        // A retry is admitted with full windows: the enforced limits allowed it, the shadow one had no room.
        'a retry admitted with full windows',
        [1, 0, 2, 0, 0, 9000, 2, 0, 0, 1, 0, 0, 9000, 1, 0, 0, 5, 0, 0, 9000, 5, 0],
        decision(
          true,
          0,
          { allowed: true, limit: 2, remaining: 0, retryAfterMs: 0, resetMs: 9000 },
          { allowed: false, limit: 1, remaining: 0, retryAfterMs: 0, resetMs: 9000, shadow: true, wouldRefuse: true },
          { allowed: true, limit: 5, remaining: 0, retryAfterMs: 0, resetMs: 9000 },
        ),
      ],
    ];

    describe.each([
      ['numbers', (reply: number[]) => reply],
      ['strings', asStrings],
      ['bigints', asBigints],
    ] as [string, (reply: number[]) => unknown[]][])('with integers as %s', (_form, form) => {
      it.each(cases)('reads %s', (_case, reply, expected) => {
        expect(reader.allow(form(reply), call)).toStrictEqual(expected);
        expect(reader.allow(form(reply), call)).toStrictEqual(throughOutcomes(V2_CONTRACT, form(reply), call));
      });
    });

    it('reads a batch reply as the decisions of its calls, in order, as the outcomes say', () => {
      const single = callOf([{ limit: 4, windowMs: 1000 }]);
      const calls = [call, single, call];
      const reply = [...cases[0][1], 1, 1, 2, 2, 0, 1000, 4, 1, ...cases[1][1]].map(String);
      const outcomes = V2_CONTRACT.batch!.parseReply(reply, calls);
      expect(reader.batch(reply, calls)).toStrictEqual(
        outcomes.map(({ allowed, limits }, i) => decisionFromOutcomes(allowed, limits, calls[i].rules, fn)),
      );
      expect(reader.batch(reply, calls)).toStrictEqual([
        cases[0][2],
        decision(true, 0, { allowed: true, limit: 4, remaining: 2, retryAfterMs: 0, resetMs: 1000, override: 'limit' }),
        cases[1][2],
      ]);
    });
  });

  it('reads v1 through its outcomes, and has no batch to read', () => {
    const reader = decisionReaderOf(V1_CONTRACT);
    const call = callOf([{ limit: 5, windowMs: 1000 }]);
    expect(reader.allow(['1', '4'], call)).toStrictEqual({
      allowed: true,
      retryAfterMs: 0,
      functionName: 'sliding_allow_v1',
      limits: [
        { allowed: true, limit: 5, remaining: 4, retryAfterMs: 0, resetMs: 1000, functionName: 'sliding_allow_v1' },
      ],
    });
    expect(() => reader.batch([1, 4], [call])).toThrow('sliding_allow_v1 has no batch function');
  });
});
