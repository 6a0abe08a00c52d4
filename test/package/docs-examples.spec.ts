import { Controller, Get, type INestApplication, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { RateLimitModule, SlidingLimit, SlidingWindowLimiter } from '../../lib';
import { useOwnRedisServer } from '../support/own-redis';
import { TEST_LIMITER_SETTINGS } from '../support/test-limiter';

/*
 * Examples of the docs that readers copy whole, run as written: `npm run lint:docs` only compiles
 * them, which cannot tell that an example ignores the .env file it is meant to read.
 */
const root = join(__dirname, '..', '..');

/** The TypeScript blocks of a docs file that follow a heading, in order. */
function snippetsUnder(file: string, heading: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const section = text.slice(text.indexOf(`\n${heading}\n`));
  return [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]);
}

/** Runs a snippet as a CommonJS module; `nestjs-sliding-limit` resolves to lib/ as in every test. */
function runModule(source: string): Record<string, unknown> {
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
    },
  });
  const exported: Record<string, unknown> = {};
  const module = { exports: exported };
  new Function('require', 'module', 'exports', outputText)(require, module, exported);
  return module.exports;
}

describe('docs/nest.md: the forRootAsync example with @nestjs/config', () => {
  const own = useOwnRedisServer();
  const saved = { cwd: process.cwd(), REDIS_URL: process.env.REDIS_URL, FN: process.env.RATE_LIMIT_FUNCTION };
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'nsl-docs-env-'));
    delete process.env.REDIS_URL;
    delete process.env.RATE_LIMIT_FUNCTION;
  });
  afterEach(() => {
    process.chdir(saved.cwd);
    rmSync(dir, { recursive: true, force: true });
    for (const [name, value] of [
      ['REDIS_URL', saved.REDIS_URL],
      ['RATE_LIMIT_FUNCTION', saved.FN],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('copied whole, reads REDIS_URL and RATE_LIMIT_FUNCTION from the .env file of the working directory', async () => {
    const [example] = snippetsUnder('docs/nest.md', '## Registering the module');
    expect(example).toContain('forRootAsync');
    // Its fallback URL pointed at a closed port: a run that ignores .env reaches no Redis at all.
    const source = example.replaceAll('redis://127.0.0.1:6379', 'redis://127.0.0.1:1');
    writeFileSync(join(dir, '.env'), `REDIS_URL=${own.server().url}\nRATE_LIMIT_FUNCTION=sliding_allow_v1\n`);
    process.chdir(dir);

    const { AppModule } = runModule(source) as { AppModule: new () => unknown };
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    try {
      await app.init();
      const limiter = app.get(SlidingWindowLimiter);
      expect(limiter.functionName).toBe('sliding_allow_v1');
      await limiter.consume('docs-example', { limit: 1, windowMs: 60_000 });
      expect(await own.connect().exists('rl:docs-example')).toBe(1);
    } finally {
      await app.close();
    }
  });
});

describe('README: the sample', () => {
  it('names every environment variable the sample reads (those it does not set itself)', () => {
    const sources = readdirSync(join(root, 'sample'))
      .filter((name) => name.endsWith('.ts'))
      .map((name) => readFileSync(join(root, 'sample', name), 'utf8'))
      .join('\n');
    const read = new Set(
      [...sources.matchAll(/process\.env\.([A-Z_]+)|config\.get(?:<\w+>)?\('([A-Z_]+)'/g)].map((m) => m[1] ?? m[2]),
    );
    const setBySample = new Set([...sources.matchAll(/process\.env\.([A-Z_]+) = /g)].map((m) => m[1]));
    const variables = [...read].filter((name) => !setBySample.has(name)).sort();
    expect(variables).toEqual(expect.arrayContaining(['PORT', 'REDIS_URL']));
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(variables.filter((name) => !readme.includes(`\`${name}`))).toEqual([]);
  });
});

describe('docs/keys-and-headers.md: IPv4 clients of a dual-stack server', () => {
  const own = useOwnRedisServer();
  const savedUrl = process.env.REDIS_URL;
  afterEach(() => {
    if (savedUrl === undefined) delete process.env.REDIS_URL;
    else process.env.REDIS_URL = savedUrl;
  });

  @Controller('ip')
  class IpController {
    @Get()
    @SlidingLimit({ name: 'docs-ip', limit: 5, windowMs: 60_000 })
    hello(): string {
      return 'ok';
    }
  }

  /** Starts an app with `imports`, listening on `host` (Nest's default when undefined), and sends one request from 127.0.0.1. */
  async function keysAfterOneRequest(imports: Type[] | undefined, host: string | undefined) {
    const admin = own.connect();
    await admin.flushall();
    const moduleRef = await Test.createTestingModule({
      imports: imports ?? [RateLimitModule.forRoot({ ...TEST_LIMITER_SETTINGS, redis: own.server().url })],
      controllers: [IpController],
    }).compile();
    const app: INestApplication = moduleRef.createNestApplication({ logger: false });
    try {
      await (host === undefined ? app.listen(0) : app.listen(0, host));
      const address = app.getHttpServer().address() as AddressInfo;
      expect((await fetch(`http://127.0.0.1:${address.port}/ip`)).status).toBe(200);
      return { family: address.family, keys: await admin.keys('rl:docs-ip:*') };
    } finally {
      await app.close();
    }
  }

  it('on the default address a dual-stack server sees ::ffff:127.0.0.1, on an IPv4 address it sees 127.0.0.1', async () => {
    const dual = await keysAfterOneRequest(undefined, undefined);
    // A host without IPv6 listens on 0.0.0.0 by default, and then the plain form is what it should see.
    expect(dual.keys).toEqual([
      dual.family === 'IPv6' ? 'rl:docs-ip:{ip:%3A%3Affff%3A127.0.0.1}' : 'rl:docs-ip:{ip:127.0.0.1}',
    ]);
    // An IPv4 listener (the docs say 0.0.0.0; the loopback one keeps the test off other interfaces).
    expect((await keysAfterOneRequest(undefined, '127.0.0.1')).keys).toEqual(['rl:docs-ip:{ip:127.0.0.1}']);
  });

  it("the docs' guard that unmaps IPv4 addresses counts 127.0.0.1 on the default address too", async () => {
    process.env.REDIS_URL = own.server().url;
    const example = snippetsUnder('docs/keys-and-headers.md', '## IPv4 clients of a dual-stack server').find((code) =>
      code.includes('extends SlidingLimitGuard'),
    );
    if (!example) throw new Error('docs/keys-and-headers.md has no guard example under its IPv4 section');
    const { AppModule } = runModule(example) as { AppModule: Type };
    expect((await keysAfterOneRequest([AppModule], undefined)).keys).toEqual(['rl:docs-ip:{ip:127.0.0.1}']);
  });
});
