import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** This package's version, from its package.json: lib/core and dist/core are both two levels below it. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
}
