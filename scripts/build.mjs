// Builds the package: compiles lib/ to dist/ and copies the Redis Function libraries (.lua)
// next to the code that reads them at runtime. tsc runs with noEmitOnError, so a type error
// fails the build without leaving half a dist/ behind.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
rmSync('dist', { recursive: true, force: true });
execFileSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--noEmitOnError'],
  {
    stdio: 'inherit',
  },
);
cpSync('lib/redis/lua', 'dist/redis/lua', { recursive: true });
