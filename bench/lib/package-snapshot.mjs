// The benchmark runs against a private copy of the built package: other work in the same tree may
// rebuild dist/ (which starts by deleting it) while a run is in progress.
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { registerTempDir } from './processes.mjs';

/**
 * Copies `<root>/dist` to `<root>/node_modules/.cache/…/dist` (where the package's dependencies still
 * resolve) and returns that path; the copy is removed when the run ends. Waits up to 30 s for a
 * complete dist/ (index.js and the shipped .lua files) if a build is under way.
 */
export async function snapshotDist(root) {
  const dist = join(root, 'dist');
  const complete = () =>
    existsSync(join(dist, 'index.js')) &&
    ['rate_limit_v1.lua', 'rate_limit_v2.lua'].every((file) => existsSync(join(dist, 'redis', 'lua', file)));
  for (let waited = 0; !complete(); waited += 500) {
    if (waited >= 30_000) throw new Error(`${dist} is missing or incomplete: run npm run build (npm run bench does)`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const dir = join(root, 'node_modules', '.cache', 'nestjs-sliding-limit-bench', `${process.pid}`);
  mkdirSync(dir, { recursive: true });
  registerTempDir(dir);
  cpSync(dist, join(dir, 'dist'), { recursive: true });
  return join(dir, 'dist');
}
