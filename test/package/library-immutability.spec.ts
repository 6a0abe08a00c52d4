import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * A released library version never changes (docs/function-versions.md, "Versioning"): servers hold
 * it under its name beside the others, instances of different package versions call it, and only a
 * name that always means one code makes that safe. A Lua fix ships as the next version. Each
 * release adds the SHA-256 of the library versions it ships here; none is ever edited.
 */
const RELEASED: Record<string, string> = {
  'rate_limit_v1.lua': 'd7edaab5c059138998ee8fc249cbd25301cb97a2f2188751f01315bc11dc1a8c',
  'rate_limit_v2.lua': 'd835c425152a4720c764fbc4f1b22e7f15d66b2511eeacb3c4b9f529cd41f5cb',
  'rate_limit_v3.lua': '37710048d9c5a283950fe0fb4555ebb90943fe3f9a44f09dca7f291dc4015b98',
};

describe('released library versions', () => {
  it.each(Object.entries(RELEASED))('%s holds the code it was released with', (file, sha256) => {
    const source = readFileSync(join(__dirname, '..', '..', 'lib', 'redis', 'lua', file));
    expect(createHash('sha256').update(source).digest('hex')).toBe(sha256);
  });
});
