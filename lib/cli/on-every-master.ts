import type { Redis } from 'ioredis';
import { isUnanswered } from '../redis/error-kind';
import { nodeAddress } from '../redis/redis-nodes';
import { messageOf } from '../redis/reply';
import { formatTable } from './format';

/** What a command did on one master: its result, or `failed` with the error the master answered. */
export interface NodeResult<R extends string> {
  node: string;
  result: R | 'failed';
  error?: string;
}

/** Runs `act` on every master at once; a master that does not answer fails the command (exit code 3). */
export function onEveryMaster<R extends string>(
  masters: readonly Redis[],
  act: (node: Redis) => Promise<R>,
): Promise<NodeResult<R>[]> {
  return Promise.all(
    masters.map(async (node): Promise<NodeResult<R>> => {
      try {
        return { node: nodeAddress(node), result: await act(node) };
      } catch (error) {
        if (isUnanswered(error)) throw error;
        return { node: nodeAddress(node), result: 'failed', error: messageOf(error) };
      }
    }),
  );
}

export function resultTable(nodes: readonly NodeResult<string>[]): string {
  return formatTable(nodes.map((n) => [n.node, n.result, n.error ?? '']));
}

export function failureOf(command: string, nodes: readonly NodeResult<string>[]): string | undefined {
  const failed = nodes.filter((n) => n.result === 'failed');
  return failed.length === 0 ? undefined : `${command} failed on ${failed.map((n) => n.node).join(', ')}`;
}
