#!/usr/bin/env node
// Checks that the package is ready to publish, as CI's last step:
//
//   node scripts/check-publish.mjs        (after npm run build, which npm test runs)
//
// 1. `npm publish --dry-run` prints no warning: no missing file, no bin or field npm would correct
//    or drop, no invalid package.json. The one warning allowed says the machine has no npm login,
//    which a dry run in CI never has.
// 2. The tarball holds what package.json points at: main, types, every exports target, every bin,
//    and README.md, CHANGELOG.md, LICENSE and the Redis Function libraries (.lua).
//
// Prints every problem and exits 1 if there is any.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const NOT_LOGGED_IN = /^npm warn publish This command requires you to be logged in/;
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const problems = [];

if (!existsSync(path.join(ROOT, pkg.main))) {
  console.error(`check-publish: ${pkg.main} is missing: run npm run build first`);
  process.exit(1);
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const run = spawnSync(npm, ['publish', '--dry-run', '--json'], { cwd: ROOT, encoding: 'utf8' });
if (run.status !== 0) problems.push(`npm publish --dry-run exited ${run.status}:\n${run.stderr}`);
for (const line of run.stderr.split('\n')) {
  if (/^npm (warn|error)/i.test(line) && !NOT_LOGGED_IN.test(line)) problems.push(line);
}

let files = new Set();
try {
  // npm prints the JSON document, keyed by package name in npm 10 and 11.
  const report = JSON.parse(run.stdout);
  const packed = report.files ? report : Object.values(report)[0];
  files = new Set(packed.files.map((file) => file.path));
} catch (error) {
  problems.push(`npm publish --dry-run --json printed no readable document: ${error.message}`);
}

const exportTargets = Object.values(pkg.exports).flatMap((target) =>
  typeof target === 'string' ? [target] : Object.values(target),
);
const luaFiles = readdirSync(path.join(ROOT, 'lib', 'redis', 'lua'))
  .filter((name) => name.endsWith('.lua'))
  .map((name) => `dist/redis/lua/${name}`);
const expected = [
  pkg.main,
  pkg.types,
  ...exportTargets,
  ...Object.values(pkg.bin),
  'README.md',
  'CHANGELOG.md',
  'LICENSE',
  ...luaFiles,
].map((file) => file.replace(/^\.\//, ''));
for (const file of new Set(expected)) {
  if (files.size > 0 && !files.has(file)) problems.push(`the tarball lacks ${file}`);
}

if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  console.error(`check-publish: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`check-publish: npm publish --dry-run is clean; ${files.size} files, ${expected.length} of them checked`);
