#!/usr/bin/env node
// Runs API Extractor once per entry point of the package: api-extractor.json for the main entry
// ('nestjs-sliding-limit') and api-extractor.<entry>.json for each subpath ('nestjs-sliding-limit/<entry>').
// Each checks its report in api/, or with --local writes it. A type a public signature uses that its
// entry point does not export (ae-forgotten-export) is an error.
//
//   node scripts/api-report.mjs [--local]
//
// The subpath entry points import the main entry by the package's name, as a user's code would: for
// the run, dist/node_modules/nestjs-sliding-limit points at dist/index.d.ts, so API Extractor sees that
// import as the package it is (reported by name) rather than as sources of the subpath's own.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const { Extractor, ExtractorConfig } = createRequire(import.meta.url)('@microsoft/api-extractor');
const localBuild = process.argv.includes('--local');
const configs = readdirSync('.')
  .filter((file) => /^api-extractor(\.[a-z-]+)?\.json$/.test(file))
  .sort();
const self = 'dist/node_modules/nestjs-sliding-limit';
mkdirSync(self, { recursive: true });
writeFileSync(`${self}/package.json`, JSON.stringify({ name: 'nestjs-sliding-limit', types: '../../index.d.ts' }));
let failed = 0;
try {
  for (const config of configs) {
    console.log(`\n== ${config}`);
    const result = Extractor.invoke(ExtractorConfig.loadFileAndPrepare(config), {
      localBuild,
      showVerboseMessages: false,
    });
    if (!result.succeeded) {
      console.error(`${config}: ${result.errorCount} errors, ${result.warningCount} warnings`);
      failed++;
    }
  }
} finally {
  rmSync('dist/node_modules', { recursive: true, force: true });
}
process.exitCode = failed > 0 ? 1 : 0;
