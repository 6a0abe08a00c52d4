import { Controller, Get, type ExecutionContext } from '@nestjs/common';
import calculateSlot from 'cluster-key-slot';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import { SlidingLimit } from '../../lib';
import { compileKey, isNamedByCaller, type KeySource } from '../../lib/nest/key-template';
import { toKeySegment } from '../../lib/nest/key-value';
import type { RateLimitRequest } from '../../lib/nest/rate-limit-key';
import { PLATFORMS, startTestApp, type TestApp } from '../support/nest-app';
import { startRedisServer, type RedisServer } from '../support/redis-server';

/*
 * Request-controlled key parts can neither choose the cluster slot nor collide with another
 * identity, and every key is bounded — for any input, by property (fast-check) over the real key
 * compiler, and through the real guard over HTTP for the cases an attacker would try first.
 *
 * Keys are `<keyPrefix><name>:{<identity>}`: the identity is the hash tag, so its slot is the key's.
 */

const FC = { numRuns: 400, verbose: fc.VerbosityLevel.Verbose } as const;
const MAX_SEGMENT = 128;
const IP = '10.1.2.3';

/** The templates the properties run through: every part kind, alone and combined. */
const TEMPLATES = [
  'ip',
  'user',
  'user:tenant.id',
  'param:id',
  'body:phone',
  'query:q',
  'header:x-api-key',
  'route',
  'global',
  'user+param:id',
  'route+ip',
  'query:q+header:x-api-key',
  'body:a.b+user',
];

/** Strings an attacker would send: braces, separators, the escape character, the hashed form, NUL, unicode. */
const hostileString = fc.oneof(
  fc.string({
    unit: fc.constantFrom('{', '}', ':', '%', '2', '5', '7', 'B', 'D', 'a', '.', '\u0000', '\n', 'ü', '😀', ' ', '*'),
    maxLength: 24,
  }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ minLength: 100, maxLength: 300 }),
  fc.stringMatching(/^[0-9a-f]{64}$/).map((hex) => `%sha256.${hex}`),
  fc.constantFrom('{victim}', '}{', '{', '}', 'a:param.id:b', 'no-user', 'ip:1.2.3.4', '%25', '%7B', ''),
);
/** Anything a body field, route parameter or user property may hold. */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constantFrom(undefined, null, {}, [], ['x'], { id: 1 }) },
);

interface Values {
  user: unknown;
  tenant: unknown;
  id: unknown;
  phone: unknown;
  a: unknown;
  q: unknown;
  apiKey: unknown;
  ip: string | undefined;
}
const values: fc.Arbitrary<Values> = fc.record({
  user: anyValue,
  tenant: anyValue,
  id: anyValue,
  phone: anyValue,
  a: anyValue,
  q: anyValue,
  apiKey: hostileString,
  ip: fc.oneof(fc.constant(IP), fc.constant('::1'), fc.constant(undefined)),
});

/** A request carrying `v`, shaped as Express and Fastify shape theirs. */
function requestOf(v: Values): RateLimitRequest {
  return {
    ip: v.ip,
    user: v.user === undefined ? undefined : { id: v.user, tenant: { id: v.tenant } },
    params: { id: v.id },
    body: { phone: v.phone, a: { b: v.a } },
    query: { q: v.q },
    headers: { 'x-api-key': v.apiKey },
  };
}

function identityOf(template: string, request: RateLimitRequest): string | undefined {
  const source: KeySource = {
    request,
    context: {} as ExecutionContext,
    route: 'OrdersController.create',
    tracker: () => request.ip,
  };
  return compileKey(template)(source) as string | undefined;
}

/**
 * What an identity stands for: each part's value as text (what toKeySegment reads: strings, finite
 * numbers, booleans; empty or anything else is "missing"), and the IP when a part is missing.
 */
function tupleOf(template: string, v: Values): unknown[] | undefined {
  const text = (value: unknown) =>
    (typeof value === 'string' && value !== '') ||
    (typeof value === 'number' && Number.isFinite(value)) ||
    typeof value === 'boolean'
      ? String(value)
      : undefined;
  const parts = template.split('+');
  const read: Record<string, unknown> = {
    ip: v.ip,
    user: v.user,
    'user:tenant.id': v.user === undefined ? undefined : v.tenant,
    'param:id': v.id,
    'body:phone': v.phone,
    'body:a.b': v.a,
    'query:q': v.q,
    'header:x-api-key': v.apiKey,
    route: 'OrdersController.create',
  };
  if (template === 'global') return ['global'];
  const tuple = parts.map((part) => text(read[part]));
  if (!tuple.includes(undefined)) return tuple;
  if (parts.includes('ip')) return text(v.ip) === undefined ? undefined : tuple;
  return text(v.ip) === undefined ? undefined : [...tuple, text(v.ip)];
}

const name = fc.stringMatching(/^[A-Za-z0-9_.-]{1,64}$/);
const keyPrefix = fc.oneof(fc.constant('rl:'), fc.stringMatching(/^[^{}]{0,128}$/));

describe('key safety (properties over the real key compiler)', () => {
  it('request values never choose the cluster slot: the slot of every key is the slot of its identity', () => {
    fc.assert(
      fc.property(fc.constantFrom(...TEMPLATES), values, name, name, keyPrefix, (template, v, name1, name2, prefix) => {
        const identity = identityOf(template, requestOf(v));
        if (identity === undefined) return; // refused with 403: no key at all
        expect(identity).not.toMatch(/[{}]/);
        const key1 = `${prefix}${name1}:{${identity}}`;
        const key2 = `${prefix}${name2}:{${identity}}`;
        expect(calculateSlot(key1)).toBe(calculateSlot(identity));
        // Stacked limits of one client share the slot, whatever their names.
        expect(calculateSlot(key2)).toBe(calculateSlot(key1));
      }),
      FC,
    );
  });

  it('distinct identity tuples never share a key (and equal ones always do)', () => {
    // Pairs that differ a little are where collisions hide: same values, moved separators, …
    const pair = fc.oneof(
      fc.tuple(values, values),
      values.map((v) => [v, { ...v }] as const),
      // A separator moved from one part into the next: "L:param.id:M" + "R" vs "L" + "M:param.id:R".
      fc.tuple(values, hostileString, hostileString, hostileString).map(
        ([v, left, middle, right]) =>
          [
            { ...v, user: `${left}:param.id:${middle}`, id: right },
            { ...v, user: left, id: `${middle}:param.id:${right}` },
          ] as const,
      ),
    );
    fc.assert(
      fc.property(fc.constantFrom(...TEMPLATES), pair, (template, [v1, v2]) => {
        const id1 = identityOf(template, requestOf(v1));
        const id2 = identityOf(template, requestOf(v2));
        const sameTuple = JSON.stringify(tupleOf(template, v1)) === JSON.stringify(tupleOf(template, v2));
        expect({ template, sameKey: id1 === id2 }).toEqual({ template, sameKey: sameTuple });
      }),
      FC,
    );
  });

  it('every identity is bounded and printable ASCII, whatever the request', () => {
    fc.assert(
      fc.property(fc.constantFrom(...TEMPLATES), values, (template, v) => {
        const identity = identityOf(template, requestOf(v));
        if (identity === undefined) return;
        const parts = template.split('+');
        // Each part: a label of at most 32 characters, ":" and a segment; a missing part adds ":ip:<ip>".
        const bound = parts.length * (32 + 1 + MAX_SEGMENT) + (parts.length - 1) + 4 + MAX_SEGMENT;
        expect(identity.length).toBeLessThanOrEqual(bound);
        expect(identity).toMatch(/^[\x21-\x7e]+$/);
      }),
      FC,
    );
  });

  it('toKeySegment is injective on text and never longer than 128 characters', () => {
    const near = hostileString.chain((s) =>
      fc.tuple(
        fc.constant(s),
        fc.oneof(hostileString, fc.constant(s), fc.constant(`${s}\u0000`), fc.constant(encodeURIComponent(s))),
      ),
    );
    fc.assert(
      fc.property(near, ([a, b]) => {
        const [sa, sb] = [toKeySegment(a), toKeySegment(b)];
        if (a === '' || b === '') return;
        expect(sa === sb).toBe(a === b);
        expect((sa as string).length).toBeLessThanOrEqual(MAX_SEGMENT);
      }),
      FC,
    );
  });

  it.each([
    ['user "a:param.id:b" vs user "a" and param "b"', { user: 'a:param.id:b', id: undefined }, { user: 'a', id: 'b' }],
    [
      'user "a:param.id:b" and param "c" vs user "a" and param "b:param.id:c"',
      { user: 'a:param.id:b', id: 'c' },
      { user: 'a', id: 'b:param.id:c' },
    ],
  ])('%s: distinct keys', (_label, first, second) => {
    const base: Values = {
      user: undefined,
      tenant: undefined,
      id: undefined,
      phone: undefined,
      a: undefined,
      q: undefined,
      apiKey: 'k',
      ip: IP,
    };
    const id1 = identityOf('user+param:id', requestOf({ ...base, ...first }));
    const id2 = identityOf('user+param:id', requestOf({ ...base, ...second }));
    expect(id1).not.toBe(id2);
  });

  it('a value spelling the hashed form of a long value does not share its key', () => {
    const long = 'x'.repeat(500);
    const spelled = `%sha256.${createHash('sha256').update(long).digest('hex')}`;
    expect(toKeySegment(long)).toBe(spelled);
    expect(toKeySegment(spelled)).toBe(`%25sha256.${spelled.slice('%sha256.'.length)}`);
    expect(toKeySegment(spelled)).not.toBe(toKeySegment(long));
  });
});

// ------------------------------------------------------------------------------------------------
// Through the real guard
// ------------------------------------------------------------------------------------------------

@Controller('orders')
class OrdersController {
  @Get()
  @SlidingLimit({ name: 'orders-minute', limit: 50, windowMs: 60_000, key: 'query:q' })
  @SlidingLimit({ name: 'orders-day', limit: 500, windowMs: 86_400_000, key: 'query:q' })
  list(): string {
    return 'ok';
  }
}

describe.each(PLATFORMS)('key safety through the guard on %s', (platform) => {
  let server: RedisServer;
  let redis: Redis;
  let app: TestApp;
  const PREFIX = 'safety:';

  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    app = await startTestApp({
      platform,
      controllers: [OrdersController],
      options: { redis: server.url, keyPrefix: PREFIX },
    });
  });
  afterAll(async () => {
    await app.close();
    redis.disconnect();
    await server.stop();
  });

  it.each([
    ['a hash tag of its own', '{victim}'],
    ['a closing brace first', '}{victim}'],
    ['an empty hash tag', '{}victim'],
    ['nested braces', '{{victim}}'],
    ['separators', 'a:param.id:b'],
    ['a long value', `{victim}${'x'.repeat(5000)}`],
  ])('%s: both stacked keys sit in the identity’s slot, not the attacker’s', async (_label, value) => {
    await redis.flushdb();
    await app.http().get('/orders').query({ q: value }).expect(200);
    const keys = (await redis.keys(`${PREFIX}orders-*`)).sort();
    expect(keys).toHaveLength(2);
    const identity = `query.q:${toKeySegment(value)}`;
    expect(keys).toEqual([`${PREFIX}orders-day:{${identity}}`, `${PREFIX}orders-minute:{${identity}}`]);
    for (const key of keys) {
      expect(calculateSlot(key)).toBe(calculateSlot(identity));
      expect(calculateSlot(key)).not.toBe(calculateSlot('victim'));
      expect(key.length).toBeLessThanOrEqual(
        PREFIX.length + 'orders-minute'.length + 3 + 'query.q:'.length + MAX_SEGMENT,
      );
      expect(await redis.pttl(key)).toBeGreaterThan(0);
    }
  });
});

describe('keys any caller can name (what the ready usage endpoint leaves out)', () => {
  it.each([
    ['body:phone', true],
    ['query:email', true],
    ['param:id', true],
    ['param:id + body:phone', true],
    ['ip + body:phone', false],
    ['user + param:id', false],
    ['header:x-api-key + query:page', false],
    ['ip', false],
    ['user', false],
    ['header:x-api-key', false],
    ['global', false],
    ['route', false],
  ])('%s: %s', (template, named) => {
    expect(isNamedByCaller(template)).toBe(named);
  });

  it('counts a key function as the caller’s own: it cannot be read', () => {
    expect(isNamedByCaller((request: RateLimitRequest) => String(request.body))).toBe(false);
  });
});
