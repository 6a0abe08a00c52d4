// The machine and software a run measured: recorded next to its numbers, which only compare within a run.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';

const require = createRequire(import.meta.url);

/** The packages whose versions the results record (those not installed say so). */
const PACKAGES = [
  'ioredis',
  '@nestjs/core',
  '@nestjs/platform-express',
  'rate-limiter-flexible',
  'autocannon',
  '@nestjs/throttler',
  '@nest-lab/throttler-storage-redis',
  '@nestjs-redis/throttler-storage',
  'redis',
];

/** The load average now, rounded: other work on the machine skews every number. */
export function loadAverage() {
  return os.loadavg().map((n) => Number(n.toFixed(2)));
}

/** The `machine` entry of the results: commit, CPU, load at start (`loadAtStart`) and now, versions. */
export function machine(root, redisVersion, loadAtStart) {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const versionOf = (name) => {
    try {
      return require(`${name}/package.json`).version;
    } catch {
      return 'not installed';
    }
  };
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return 'unknown';
    }
  };
  return {
    commit: git('rev-parse', 'HEAD'),
    uncommittedLibChanges: git('status', '--porcelain', '--', 'lib') !== '',
    nproc: os.availableParallelism(),
    loadAverageAtStart: loadAtStart,
    loadAverageAtEnd: loadAverage(),
    cpu: cpuinfo.match(/^model name\s*:\s*(.+)$/m)?.[1] ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    redis: redisVersion,
    packages: Object.fromEntries(PACKAGES.map((name) => [name, versionOf(name)])),
  };
}
