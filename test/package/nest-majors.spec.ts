import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_FUNCTION_NAME } from 'nestjs-sliding-limit';
import { sharedRedisUrl, uniquePrefix } from '../support/test-redis';

/*
 * The peer ranges promise NestJS 10, 11 and 12 and ioredis 5 and 6. The suite runs on Nest 11; this
 * installs the packed package beside the other majors (Nest 12 is ESM-only: the CommonJS package
 * loads it through Node's require(esm)) and runs a limited route end to end.
 */
const ROOT = join(__dirname, '..', '..');
// Asynchronous, not execFileSync: a worker blocked for the ~40 s of installs could neither time the
// test out nor finish what earlier files in it left closing, and jest then force-kills it at the end.
const run = promisify(execFile);
const COMBINATIONS = [
  { nest: '10', ioredis: '5' },
  { nest: '12', ioredis: '6' },
];

describe('NestJS and ioredis majors beside the dev ones', () => {
  let tarball: string;
  let packDir: string;
  beforeAll(async () => {
    packDir = mkdtempSync(join(tmpdir(), 'nsl-pack-'));
    const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    const [packed] = JSON.parse(stdout) as [{ filename: string }];
    tarball = join(packDir, packed.filename);
  });
  afterAll(() => rmSync(packDir, { recursive: true, force: true }));

  it.each(COMBINATIONS)(
    'NestJS $nest with ioredis $ioredis: limits a route and answers 429, and says when the module is missing',
    async ({ nest, ioredis }) => {
      const dir = mkdtempSync(join(tmpdir(), `nsl-nest${nest}-`));
      try {
        writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `compat-nest${nest}`, private: true }));
        await run(
          'npm',
          [
            'install',
            '--no-audit',
            '--no-fund',
            '--ignore-scripts',
            '--loglevel=error',
            `@nestjs/common@${nest}`,
            `@nestjs/core@${nest}`,
            `@nestjs/platform-express@${nest}`,
            'reflect-metadata@0.2',
            'rxjs@7',
            `ioredis@${ioredis}`,
            tarball,
          ],
          { cwd: dir },
        );
        copyFileSync(join(__dirname, 'nest-app.mjs'), join(dir, 'nest-app.mjs'));
        const { stdout } = await run(process.execPath, ['nest-app.mjs'], {
          cwd: dir,
          encoding: 'utf8',
          env: { ...process.env, REDIS_URL: sharedRedisUrl(), KEY_PREFIX: uniquePrefix(`nest${nest}`) },
        });
        const result = JSON.parse(stdout.trim().split('\n').pop() as string) as {
          answers: { status: number; remaining: string | null; retryAfter: string | null }[];
          functionName: string;
          mode: string;
          warnings: string[];
        };
        expect(result.answers).toEqual([
          { status: 200, remaining: '1', retryAfter: null },
          { status: 200, remaining: '0', retryAfter: null },
          { status: 429, remaining: '0', retryAfter: '60' },
        ]);
        expect(result).toMatchObject({ functionName: DEFAULT_FUNCTION_NAME, mode: 'function' });
        // The decorator's start-up check runs on this major too.
        expect(result.warnings).toEqual([
          expect.stringContaining('LimitedController carries @SlidingLimit, but the application does not import'),
        ]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    180_000,
  );
});
