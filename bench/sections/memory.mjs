// 4. Memory per key, filled through consume() with the limiter's own members: MEMORY USAGE of a full
//    key at several limits (128 / 129 straddle Redis' listpack-to-skiplist threshold), and at limit 100
//    our members against the "<ms>:<32 hex>" members of the script articles, same key shape, written by
//    the article's function (a bare FCALL of sliding_allow_v1: the same sorted set, one entry per request).
import { randomBytes } from 'node:crypto';
import { bareFcall } from '../lib/decisions.mjs';
import { ratios, spread } from '../lib/measure.mjs';
import { log } from '../lib/report.mjs';

export async function memory({
  settings: { rounds },
  report,
  redis: { plain: client },
  build: { SlidingWindowLimiter },
}) {
  log('4/6 memory per key');
  const LIMITS = [10, 100, 128, 129, 1000];
  const limiter = new SlidingWindowLimiter({ client, keyPrefix: 'rl:' });
  await limiter.init();
  const measured = {};
  let fallbacks = 0;
  for (let round = 0; round < rounds; round++) {
    for (const limit of LIMITS) {
      const key = `mem${round}:{ip:10.0.${limit >> 8}.${limit & 255}}`;
      const rule = { limit, windowMs: 3_600_000 };
      for (let i = 0; i < limit; i++) if ((await limiter.consume(key, rule)).degraded) fallbacks++;
      measured[limit] ??= { bytes: [], encoding: undefined };
      measured[limit].bytes.push(await client.memory('USAGE', `rl:${key}`, 'SAMPLES', 0));
      measured[limit].encoding = await client.object('ENCODING', `rl:${key}`);
    }
  }
  // The member format of the script articles (<ms>:<32 hex>), same key shape, for a ratio.
  const article = [];
  const articleRule = { limit: 100, windowMs: 3_600_000 };
  for (let round = 0; round < rounds; round++) {
    const key = `rl:art${round}:{ip:10.0.0.100}`;
    for (let i = 0; i < 100; i++) {
      await bareFcall(client, key, Date.now(), articleRule, `${Date.now()}:${randomBytes(16).toString('hex')}`);
    }
    article.push(await client.memory('USAGE', key, 'SAMPLES', 0));
  }
  limiter.close?.();
  if (fallbacks > 0)
    throw new Error(`memory: ${fallbacks} consume() calls were decided without Redis; the keys are not full`);
  report.record('memory', { measured, article });
  for (const limit of LIMITS) {
    const s = spread(measured[limit].bytes);
    const gated = limit === 100;
    if (gated) report.target('memory', s);
    report.row('4 memory', `bytes per key at limit ${limit} (${measured[limit].encoding})`, {
      spread: s,
      unit: 'B',
      digits: 0,
      absolute: `${(s.median / limit).toFixed(1)} B per entry`,
      ...(gated ? { target: '≤ 2700 B', pass: s.median <= 2700 } : {}),
    });
  }
  report.row('4 memory', 'limit 100: our members / "<ms>:<32 hex>" members', {
    spread: spread(ratios(measured[100].bytes, article)),
    absolute: `${spread(measured[100].bytes).median} B vs ${spread(article).median} B`,
  });
}
