import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { FUNCTION_VERSIONS } from '../../lib/redis/function-versions';
import { libraryNameOf, readLibrarySource } from '../../lib/redis/lua-library';

/*
 * The package as users install it: what `npm pack` ships and what `require` resolves.
 * Runs against dist/, which `npm test` builds first (pretest).
 */
const root = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  main: string;
  types: string;
  exports: Record<string, { types: string; default: string } | string>;
  dependencies?: Record<string, string>;
  peerDependencies: Record<string, string>;
};

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe('the published package', () => {
  beforeAll(() => {
    if (!existsSync(join(root, 'dist', 'index.js')))
      throw new Error('dist/ is missing: run `npm run build` (npm test does it)');
  });

  it('points main, types and exports at built files', () => {
    const dot = pkg.exports['.'] as { types: string; default: string };
    for (const file of [pkg.main, pkg.types, dot.types, dot.default]) expect(existsSync(join(root, file))).toBe(true);
  });

  it('resolves every subpath entry point by its own name to its build, declarations included', () => {
    const subpaths = Object.keys(pkg.exports).filter((entry) => entry !== '.' && entry !== './package.json');
    expect(subpaths.sort()).toEqual([
      './graphql',
      './health',
      './microservices',
      './opentelemetry',
      './prometheus',
      './testing',
      './websockets',
    ]);
    for (const subpath of subpaths) {
      const target = pkg.exports[subpath] as { types: string; default: string };
      for (const file of [target.types, target.default]) expect(existsSync(join(root, file))).toBe(true);
      const name = `nestjs-sliding-limit/${subpath.slice(2)}`;
      const resolved = execFileSync(process.execPath, ['-e', `console.log(require.resolve(${JSON.stringify(name)}))`], {
        cwd: root,
        encoding: 'utf8',
      }).trim();
      expect(relative(root, resolved)).toBe(join(target.default));
    }
  });

  it('requires no optional peer from the main entry: only a subpath entry point requires its own', () => {
    // @nestjs/core itself loads @nestjs/websockets and @nestjs/microservices when they are installed:
    // count only what the package's own files ask for.
    const script = [
      "const Module = require('module'), asked = new Set(), load = Module._load",
      'Module._load = function (request, parent) {',
      "  if (/^(@nestjs\\/(graphql|websockets|microservices|terminus)|graphql|@opentelemetry\\/api|prom-client)$/.test(request) && parent?.filename.includes('/dist/')) asked.add(request)",
      '  return load.apply(this, arguments)',
      '}',
      'require(process.argv[1])',
      'console.log(JSON.stringify([...asked].sort()))',
    ].join('\n');
    const asked = (entry: string) =>
      JSON.parse(execFileSync(process.execPath, ['-e', script, entry], { cwd: root, encoding: 'utf8' })) as string[];
    expect(asked('nestjs-sliding-limit')).toEqual([]);
    expect(asked('nestjs-sliding-limit/graphql')).toEqual(['@nestjs/graphql', 'graphql']);
    expect(asked('nestjs-sliding-limit/websockets')).toEqual(['@nestjs/websockets']);
    expect(asked('nestjs-sliding-limit/microservices')).toEqual(['@nestjs/microservices']);
  });

  it('resolves by its own name to the build, with the Lua next to it', () => {
    // jest maps the package name to lib/ for the other tests; ask Node's own resolver.
    const script = [
      "const p = require('nestjs-sliding-limit')",
      "console.log(require.resolve('nestjs-sliding-limit'))",
      "const lua = require('path').join(require.resolve('nestjs-sliding-limit'), '..', 'redis', 'lua')",
      "console.log(typeof p.SlidingWindowLimiter, require('fs').readdirSync(lua).join(','))",
    ].join(';');
    const [resolved, exported] = execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' })
      .trim()
      .split('\n');
    expect(relative(root, resolved)).toBe(join('dist', 'index.js'));
    expect(exported).toBe('function rate_limit_v1.lua,rate_limit_v2.lua');
  });

  it.each(FUNCTION_VERSIONS.map((v) => [v.sourceFile, v.libraryName] as const))(
    'ships %s assembled, as FUNCTION LOAD receives it (the text the package loads and pins)',
    (file, libraryName) => {
      const shipped = readFileSync(join(root, 'dist', 'redis', 'lua', file), 'utf8');
      expect(shipped).toBe(readLibrarySource(file));
      expect(libraryNameOf(shipped)).toBe(libraryName);
      expect(shipped).not.toMatch(/^--- @include/m);
    },
  );

  it('ships dist with declarations and the .lua libraries, and no sources or tests', () => {
    const [{ files }] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' }),
    ) as [{ files: { path: string }[] }];
    const paths = files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.d.ts',
        'dist/redis/lua/rate_limit_v1.lua',
        'dist/redis/lua/rate_limit_v2.lua',
        'README.md',
        'CHANGELOG.md',
        'LICENSE',
        'package.json',
      ]),
    );
    expect(paths.filter((p) => p.startsWith('lib/') || p.startsWith('test/') || p.startsWith('sample/'))).toEqual([]);
    // The libraries' parts are assembled into them by the build, not shipped.
    expect(paths.filter((p) => p.startsWith('dist/redis/lua/')).sort()).toEqual(
      FUNCTION_VERSIONS.map((v) => `dist/redis/lua/${v.sourceFile}`).sort(),
    );
  });

  it('declares every package that lib/ imports', () => {
    const declared = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies)]);
    const builtins = new Set(builtinModules);
    const undeclared = new Set<string>();
    for (const file of filesUnder(join(root, 'lib')).filter((f) => f.endsWith('.ts'))) {
      const source = readFileSync(file, 'utf8');
      for (const [, specifier] of source.matchAll(/(?:from|import|require\()\s*['"]([^'"]+)['"]/g)) {
        if (specifier.startsWith('.') || specifier.startsWith('node:') || builtins.has(specifier)) continue;
        // The entry points import the main entry by the package's own name.
        if (specifier === pkg.name) continue;
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
        if (!declared.has(name)) undeclared.add(`${name} (${relative(root, file)})`);
      }
    }
    expect([...undeclared]).toEqual([]);
  });
});
