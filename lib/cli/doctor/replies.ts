import { UnexpectedReplyError } from '../../core/errors/unexpected-reply.error';
import { toInteger, toRecord, toText } from '../../redis/reply';

/*
 * Parsers of the replies the doctor reads. Each accepts every shape ioredis gives: RESP2, RESP3
 * with the legacy mapping (maps as flat arrays) and RESP3 with `replyMapping: 'resp3'` (maps as
 * objects), strings or buffers, verbatim strings, integers as numbers or strings.
 */

/** The `field:value` lines of an INFO reply (any section), or of CLUSTER INFO. */
export function parseInfoFields(reply: unknown): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of toText(reply).split(/\r?\n/)) {
    if (line.startsWith('#')) continue;
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  return fields;
}

/** `ip=10.0.0.2,port=6380,state=online` → a map (INFO replication's `slave0:` values). */
export function parseInfoList(value: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const part of value.split(',')) {
    const equals = part.indexOf('=');
    if (equals > 0) fields.set(part.slice(0, equals), part.slice(equals + 1));
  }
  return fields;
}

/** CONFIG GET: a map (RESP3) or flat pairs (RESP2), to a record of strings. */
export function parseConfigGet(reply: unknown): Record<string, string> {
  const record = toRecord(reply, 'CONFIG GET');
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, toText(value)]));
}

/** An integer that may come as a number, a string or a buffer; undefined when it is not one. */
export function integerOf(value: unknown): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = typeof value === 'number' || typeof value === 'bigint' ? value : toText(value);
  try {
    return toInteger(text, 'reply', value);
  } catch {
    return undefined;
  }
}

/** One SLOWLOG GET entry. */
export interface SlowlogEntry {
  id: number;
  /** When it ran, Unix seconds. */
  timestamp: number;
  durationUs: number;
  args: string[];
  client: string;
}

/** SLOWLOG GET: an array of `[id, timestamp, microseconds, [args…], client, name]`. */
export function parseSlowlog(reply: unknown): SlowlogEntry[] {
  if (!Array.isArray(reply)) throw new UnexpectedReplyError('SLOWLOG GET', reply);
  return reply.map((entry: unknown) => {
    if (!Array.isArray(entry) || entry.length < 4 || !Array.isArray(entry[3]))
      throw new UnexpectedReplyError('SLOWLOG GET', reply);
    return {
      id: toInteger(entry[0], 'SLOWLOG GET', reply),
      timestamp: toInteger(entry[1], 'SLOWLOG GET', reply),
      durationUs: toInteger(entry[2], 'SLOWLOG GET', reply),
      args: (entry[3] as unknown[]).map(toText),
      client: entry[4] === undefined ? '' : toText(entry[4]),
    };
  });
}

/** One LATENCY LATEST event. */
export interface LatencyEvent {
  event: string;
  /** Unix seconds of the latest spike. */
  timestamp: number;
  latestMs: number;
  maxMs: number;
}

/** LATENCY LATEST: an array of `[event, timestamp, latest ms, max ms]`. */
export function parseLatencyLatest(reply: unknown): LatencyEvent[] {
  if (!Array.isArray(reply)) throw new UnexpectedReplyError('LATENCY LATEST', reply);
  return reply.map((entry: unknown) => {
    if (!Array.isArray(entry) || entry.length < 4) throw new UnexpectedReplyError('LATENCY LATEST', reply);
    return {
      event: toText(entry[0]),
      timestamp: toInteger(entry[1], 'LATENCY LATEST', reply),
      latestMs: toInteger(entry[2], 'LATENCY LATEST', reply),
      maxMs: toInteger(entry[3], 'LATENCY LATEST', reply),
    };
  });
}

/** One range of CLUSTER SLOTS, with the address of the master serving it. */
export interface SlotRange {
  from: number;
  to: number;
  master: string;
}

/** CLUSTER SLOTS: `[[from, to, [host, port, id, …], replicas…], …]`. */
export function parseClusterSlots(reply: unknown): SlotRange[] {
  if (!Array.isArray(reply)) throw new UnexpectedReplyError('CLUSTER SLOTS', reply);
  return reply.map((entry: unknown) => {
    if (!Array.isArray(entry) || entry.length < 3 || !Array.isArray(entry[2]))
      throw new UnexpectedReplyError('CLUSTER SLOTS', reply);
    const master = entry[2] as unknown[];
    return {
      from: toInteger(entry[0], 'CLUSTER SLOTS', reply),
      to: toInteger(entry[1], 'CLUSTER SLOTS', reply),
      master: `${toText(master[0])}:${toText(master[1])}`,
    };
  });
}

/** One line of CLUSTER NODES. */
export interface ClusterNodeLine {
  id: string;
  /** host:port, without the cluster bus port. */
  address: string;
  flags: string[];
  /** The master's id, for a replica. */
  masterId: string | null;
  linkState: string;
}

/** CLUSTER NODES: one node per line, `<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slots…>`. */
export function parseClusterNodes(reply: unknown): ClusterNodeLine[] {
  return toText(reply)
    .split(/\r?\n/)
    .filter((line) => line.trim().length > 0)
    .map((line) => {
      const [id, address = '', flags = '', masterId = '-', , , , linkState = ''] = line.trim().split(' ');
      return {
        id,
        address: address.split('@')[0].split(',')[0],
        flags: flags.split(','),
        masterId: masterId === '-' ? null : masterId,
        linkState,
      };
    });
}
