import type { FunctionContract } from '../core/function-contract';
import { SERVER_TIME } from '../core/function-contract';
import { parseServerTimeMs } from '../redis/reply';
import type { KeyCommands } from '../core/limiter-backend';
import type { ClockSource } from './sliding-window-limiter.interfaces';

/** "now" as a function argument: epoch ms, or {@link SERVER_TIME} for the function to read TIME itself. */
export type NowMs = number | typeof SERVER_TIME;

/** Where one version's calls take "now" from. Synchronous except for v1 with the server clock. */
export type Clock = () => NowMs | Promise<number>;

/** The clock for calls to `contract`, given the `clock` option. */
export function clockFor(contract: FunctionContract, source: ClockSource, client: KeyCommands): Clock {
  if (typeof source === 'function') return source;
  if (source === 'local') return Date.now;
  // 'server': inside the function when the version can read TIME, otherwise one TIME round trip.
  return contract.full ? () => SERVER_TIME : () => serverTimeMs(client);
}

/** Epoch ms of the Redis server. */
export async function serverTimeMs(client: KeyCommands): Promise<number> {
  return parseServerTimeMs(await client.time());
}

/** A numeric "now", asking the server when the clock defers to it. */
export async function numericNow(clock: Clock, client: KeyCommands): Promise<number> {
  const now = await clock();
  return now === SERVER_TIME ? serverTimeMs(client) : now;
}
