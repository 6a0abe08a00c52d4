#!/usr/bin/env node
// Runs API Extractor once per entry point of the package: api-extractor.json for the main entry
// ('nestjs-sliding-limit') and api-extractor.<entry>.json for each subpath ('nestjs-sliding-limit/<entry>').
// Each checks its report in api/, or with --local writes it.
//
//   node scripts/api-report.mjs [--local]
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';

const { Extractor, ExtractorConfig } = createRequire(import.meta.url)('@microsoft/api-extractor');
const localBuild = process.argv.includes('--local');
const configs = readdirSync('.')
  .filter((file) => /^api-extractor(\.[a-z-]+)?\.json$/.test(file))
  .sort();
let failed = 0;
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
process.exitCode = failed > 0 ? 1 : 0;
