import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const DIST = join(__dirname, '..', '..', 'dist');

/** The optional peers a fresh Node process has loaded after requiring `entry` from the build. */
function peersLoadedBy(entry: string): string[] {
  const script = `
    require(${JSON.stringify(entry)});
    const peers = new Set();
    for (const file of Object.keys(require.cache)) {
      const match = /node_modules[\\\\/](@opentelemetry[\\\\/][^\\\\/]+|prom-client)[\\\\/]/.exec(file);
      if (match) peers.add(match[1].replace('\\\\', '/'));
    }
    console.log(JSON.stringify([...peers].sort()));`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as string[];
}

describe('optional peers of the metrics exports', () => {
  it('the main entry loads neither @opentelemetry/api nor prom-client', () => {
    expect(peersLoadedBy(DIST)).toEqual([]);
  });

  it('nestjs-sliding-limit/opentelemetry loads @opentelemetry/api only (not the SDK, not prom-client)', () => {
    expect(peersLoadedBy(join(DIST, 'opentelemetry'))).toEqual(['@opentelemetry/api']);
  });
});
