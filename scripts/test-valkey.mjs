// `npm run test:valkey`: the tests that say whether Valkey is a first-class server, run on valkey-server
// (TEST_SERVER=valkey; see test/support/test-server.ts). Valkey comes from VALKEY_SERVER, or else from
// ../shared/valkey/build.sh, which builds it once per machine. Extra arguments go to jest.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Path patterns (jest regular expressions, from the repository root), each with why it is here. */
const SLICE = [
  // The Lua contract of every shipped library version, FCALL by FCALL: lua-contract.spec.ts iterates
  // FUNCTION_VERSIONS, and a version with a file of its own (lua-contract-v2.spec.ts) matches too.
  'test/redis/lua-contract',
  // Loading, verifying, and recovery from FUNCTION FLUSH, SCRIPT FLUSH and a restart; script mode.
  'test/redis/recovery\\.spec\\.ts',
  // A server without FUNCTION: the start-up error names the cause and the fix.
  'test/redis/functions-unavailable\\.spec\\.ts',
  // INFO (Redis or Valkey), FUNCTION STATS and every reply, through ioredis 5 and 6, RESP2 and RESP3.
  'test/redis/client-compat\\.spec\\.ts',
  // Exactness under concurrency: 4 processes racing for one key admit exactly the limit.
  'test/limiter/concurrency\\.spec\\.ts',
  // The article's canary and rollback: v1 and v2 on the same keys keep every admission.
  'test/limiter/v1-v2-history\\.spec\\.ts',
  // A 3 + 3 cluster: loading on every master, CROSSSLOT-free batches, replicas, a failover.
  'test/limiter/resilience/cluster\\.spec\\.ts',
  // The ops CLI, standalone and on a cluster, in-process and as the built bin.
  'test/cli/',
  // The health indicator, which names the server and its version.
  'test/health/',
  // A server out of memory (maxmemory, noeviction) refusing every write: degraded decisions show.
  'test/limiter/resilience/degraded-visibility\\.spec\\.ts',
  // Limits as data through the guard (sliding_allow_v2): tiers from a policy, plan changes, shadow
  // limits and candidates, per-key overrides read in the same FCALL — standalone and on a 3-master
  // cluster — and shadow limits that would refuse exactly what the same limit enforced refuses.
  'test/nest/policies(-cluster|-shadow-count)?\\.e2e-spec\\.ts',
];

const root = fileURLToPath(new URL('..', import.meta.url));
const files = listFiles(join(root, 'test')).map((file) => relative(root, file));
const unmatched = SLICE.filter((pattern) => !files.some((file) => new RegExp(pattern).test(file)));
if (unmatched.length > 0) {
  console.error(
    `test:valkey: no test file matches ${unmatched.join(', ')}; update the slice in scripts/test-valkey.mjs`,
  );
  process.exit(1);
}

const jest = createRequire(import.meta.url).resolve('jest/bin/jest');
const run = spawnSync(process.execPath, [jest, ...SLICE, ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, TEST_SERVER: 'valkey' },
});
process.exitCode = run.status ?? 1;

function listFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}
