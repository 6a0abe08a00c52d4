import type { Redis } from 'ioredis';
import { FunctionsUnavailableError, type MissingFunctionSupport } from '../core/errors/functions-unavailable.error';
import { nodeAddress } from './redis-nodes';
import { isEngineNotFound, isUnknownCommand, messageOf, toRecord } from './reply';
import { readServerInfo } from './server-info';

/** Why a node cannot run Redis Functions (from `failure`, else FUNCTION STATS), or undefined. */
export async function functionsUnavailableOn(
  node: Redis,
  failure?: unknown,
): Promise<FunctionsUnavailableError | undefined> {
  const found = failure === undefined ? await askFunctionStats(node) : readFailure(failure);
  if (!found) return undefined;
  const [server, evalError] = await Promise.all([
    readServerInfo(node).catch(() => undefined),
    node.call('EVAL', 'return 1', '0').then(
      () => undefined,
      (error: unknown) => firstLine(messageOf(error)),
    ),
  ]);
  return new FunctionsUnavailableError({ node: nodeAddress(node), server, evalError, ...found });
}

interface Found {
  missing: MissingFunctionSupport;
  redisMessage: string;
}

function readFailure(failure: unknown): Found | undefined {
  const redisMessage = firstLine(messageOf(failure));
  if (isUnknownCommand(failure, 'FUNCTION')) return { missing: 'function-command', redisMessage };
  if (isEngineNotFound(failure)) return { missing: 'lua-engine', redisMessage };
  return undefined;
}

async function askFunctionStats(node: Redis): Promise<Found | undefined> {
  let reply: unknown;
  try {
    reply = await node.call('FUNCTION', 'STATS');
  } catch (error) {
    return readFailure(error);
  }
  const listed = toRecord(reply, 'FUNCTION STATS').engines;
  if (listed === undefined || listed === null) return undefined;
  const engines = Object.keys(toRecord(listed, 'FUNCTION STATS'));
  if (engines.some((engine) => engine.toUpperCase() === 'LUA')) return undefined;
  return { missing: 'lua-engine', redisMessage: `FUNCTION STATS lists the engines: ${engines.join(', ') || 'none'}` };
}

/** The first line of a server error, without the arguments an unknown command echoes back. */
function firstLine(text: string): string {
  return text
    .split('\n')[0]
    .replace(/, with args beginning with:.*$/, '')
    .trim();
}
