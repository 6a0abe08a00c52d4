import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { intersects, minVersion } from 'semver';

/*
 * The Node versions the package declares (engines, the README's "Node.js 20 or newer") are the
 * versions it is developed and tested on: `npm ci` on the oldest declared major must install
 * every locked package without an EBADENGINE warning, dev tooling included.
 */
const root = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

describe('Node versions', () => {
  const oldest = minVersion(pkg.engines.node);
  const oldestMajor = `>=${oldest?.major}.0.0 <${(oldest?.major ?? 0) + 1}.0.0`;

  it('the README names the oldest major the package declares', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain(`Node.js ${oldest?.major} or newer`);
  });

  it('every locked package accepts that major (npm ci warns EBADENGINE otherwise)', () => {
    const refusing = Object.entries(lock.packages)
      .filter(([path]) => path !== '')
      .flatMap(([path, entry]) => {
        // Old packages wrote engines as an array; npm ignores those.
        const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
        return range && !intersects(range, oldestMajor) ? [`${path}@${entry.version}: node ${range}`] : [];
      });
    expect(refusing).toEqual([]);
  });
});
