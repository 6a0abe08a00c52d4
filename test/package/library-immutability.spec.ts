import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FUNCTION_VERSIONS } from '../../lib/redis/function-versions';
import { readLibrarySource } from '../../lib/redis/lua-library';

/*
 * A released library never changes (docs/function-versions.md, "Versioning"): servers hold it under
 * its name beside the others, instances of different package versions call it, and only a name that
 * always means one code makes that safe. A Lua fix ships as the next version.
 *
 * rate_limit_v1 is pinned from the start: it is the source article's contract, which teams load by
 * hand before moving to the package. The others are pinned by the first release that ships them: it
 * adds the SHA-256 of their text as FUNCTION LOAD receives it (assembled from its parts, so an edit
 * of any part shows here); none is ever edited.
 */
const RELEASED: Record<string, string> = {
  rate_limit_v1: 'd7edaab5c059138998ee8fc249cbd25301cb97a2f2188751f01315bc11dc1a8c',
};

const changelog = readFileSync(join(__dirname, '..', '..', 'CHANGELOG.md'), 'utf8');
/** `## [0.1.0] - 2027-01-10`: a release tagged in the CHANGELOG (`## [Unreleased]` is not one). */
const tagged = /^## \[\d+\.\d+\.\d+\]/m.test(changelog);

describe('released library versions', () => {
  it.each(Object.entries(RELEASED))('%s holds the code it was released with', (library, sha256) => {
    const source = readLibrarySource(`${library}.lua`);
    expect(createHash('sha256').update(source).digest('hex')).toBe(sha256);
  });

  it('pins every bundled library once a release is tagged in the CHANGELOG', () => {
    const unpinned = FUNCTION_VERSIONS.map((version) => version.libraryName).filter((name) => !(name in RELEASED));
    expect(tagged ? unpinned : []).toEqual([]);
  });
});
