// Counting what reaches Redis. `INFO commandstats` also counts the commands a function or script runs
// inside (ZADD, ZCARD, …), so it tells how many decisions ran (FCALL, EVALSHA, …) but not how many
// round trips a client made; MONITOR tells that: commands run by Lua are marked `[<db> lua]`.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const Redis = require('ioredis').default;

/** Commands that run a function or a script: one call each (a batch call carries several decisions). */
export const SCRIPT_CALLS = ['fcall', 'fcall_ro', 'evalsha', 'evalsha_ro', 'eval', 'eval_ro'];

/**
 * `{ command: { calls, usec } }` from INFO commandstats of the server `client` is connected to
 * (subcommands as `config|get`): the one parser of that text, so every count and time reads it alike.
 */
export async function commandStats(client) {
  const stats = {};
  for (const match of (await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    stats[match[1]] = { calls: Number(match[2]), usec: Number(match[3]) };
  }
  return stats;
}

/** `{ command: calls }` from INFO commandstats. */
export async function commandCalls(client) {
  return Object.fromEntries(Object.entries(await commandStats(client)).map(([command, { calls }]) => [command, calls]));
}

/** `after - before`, per command, leaving out what the stats client itself sends. */
export function callsDelta(before, after) {
  const delta = {};
  for (const [command, calls] of Object.entries(after)) {
    if (command === 'info') continue;
    const diff = calls - (before[command] ?? 0);
    if (diff > 0) delta[command] = diff;
  }
  return delta;
}

/** Microseconds Redis spent in function and script calls (what they run inside included), from `commandStats()`. */
export function scriptMicros(stats) {
  return SCRIPT_CALLS.reduce((sum, command) => sum + (stats[command]?.usec ?? 0), 0);
}

export function scriptCalls(delta) {
  return SCRIPT_CALLS.reduce((sum, command) => sum + (delta[command] ?? 0), 0);
}

/** The limiter's periodic instance report (`<keyPrefix>__nsl:instance:<id>`): not made by a request. */
const BACKGROUND_KEY = /__nsl:instance:/;

/**
 * Watches every command with MONITOR until `stop()`: commands sent by clients (round trips, leaving
 * out `ignorePorts`' connections and the limiter's background writes, counted apart) and commands run
 * inside Lua. Only for counting: it slows Redis.
 */
export async function monitor(port, ignorePorts = []) {
  const watcher = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
  await watcher.connect();
  const ignored = new Set([...ignorePorts, watcher.stream.localPort].map(String));
  const stream = await watcher.monitor();
  const counts = { client: 0, lua: 0, background: 0, byCommand: {} };
  stream.on('monitor', (_time, args, source) => {
    // source: "lua" for a command run by a function or script, else the client's "127.0.0.1:53124"
    if (source === 'lua') {
      counts.lua++;
      return;
    }
    if (ignored.has(source.slice(source.lastIndexOf(':') + 1))) return;
    if (args.slice(1).some((arg) => BACKGROUND_KEY.test(String(arg)))) {
      counts.background++;
      return;
    }
    counts.client++;
    const command = String(args[0]).toLowerCase();
    counts.byCommand[command] = (counts.byCommand[command] ?? 0) + 1;
  });
  return {
    async stop() {
      // Let the last commands reach the stream.
      await new Promise((resolve) => setTimeout(resolve, 200));
      stream.disconnect();
      watcher.disconnect();
      return counts;
    },
  };
}

/**
 * Deletes every key matching `pattern` (SCAN + DEL: freed at once, not in the background, so that the
 * next used_memory baseline is not still falling).
 */
export async function deleteMatching(client, pattern) {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 5000);
    cursor = next;
    if (keys.length > 0) await client.del(...keys);
  } while (cursor !== '0');
}
