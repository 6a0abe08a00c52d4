#!/usr/bin/env node
'use strict';
// The operations CLI: `npx nestjs-sliding-limit functions <command>`; see --help.
require('../dist/cli/main.js')
  .main(process.argv.slice(2))
  .then(
    (code) => {
      process.exitCode = code;
    },
    (error) => {
      process.stderr.write(`error: ${error && error.message}\n`);
      process.exitCode = 1;
    },
  );
