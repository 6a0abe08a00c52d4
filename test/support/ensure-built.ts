import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

function newestMtimeMs(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtimeMs(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds dist/ when it is missing or older than lib/. `npm test` builds in pretest; a lone `npx jest`
 * may find it stale. Done once, in global setup, so no test rebuilds dist/ while another reads it
 * (the package test, the bin test and the concurrency workers all load the build).
 */
export function ensureBuilt(): void {
  const entry = join(ROOT, 'dist', 'index.js');
  const shipsLua = ['rate_limit_v1.lua', 'rate_limit_v2.lua'].every((file) =>
    existsSync(join(ROOT, 'dist', 'redis', 'lua', file)),
  );
  if (shipsLua && existsSync(entry) && statSync(entry).mtimeMs >= newestMtimeMs(join(ROOT, 'lib'))) return;
  try {
    execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(
      `npm run build failed; tests that load dist/ need it:\n${stdout?.toString() ?? ''}${stderr?.toString() ?? ''}`,
      { cause: error },
    );
  }
}
