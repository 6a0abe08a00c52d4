import { Test } from '@nestjs/testing';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { SlidingWindowLimiter } from '../../lib';
import { useOwnRedisServer } from '../support/own-redis';

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
