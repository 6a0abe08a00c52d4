// Builds the package: compiles lib/ to dist/ and writes the Redis Function libraries (.lua) next to
// the code that reads them at runtime, each assembled from its parts (`--- @include` lines) by the
// package's own assembler, so dist/redis/lua/<library>.lua is the text FUNCTION LOAD receives (and
// `redis-cli -x FUNCTION LOAD < …` loads it as it is); the parts themselves are not shipped. tsc runs
// with noEmitOnError, so a type error fails the build without leaving half a dist/ behind; a missing
// or oversized part fails it with the assembler's message.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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
const { assembleLibrary } = require('../dist/redis/lua-library.js');
mkdirSync('dist/redis/lua', { recursive: true });
for (const library of readdirSync('lib/redis/lua').filter((name) => name.endsWith('.lua'))) {
  try {
    writeFileSync(`dist/redis/lua/${library}`, assembleLibrary('lib/redis/lua', library));
  } catch (error) {
    console.error(`build: lib/redis/lua/${library}: ${error.message}`);
    process.exit(1);
  }
}
