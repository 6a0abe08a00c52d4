import { UnexpectedReplyError } from '../../core/errors/unexpected-reply.error';
import { toInteger, toRecord, toText } from '../../redis/reply';

// Parsers of the replies the doctor reads, in every shape ioredis gives (RESP2, RESP3 mapped or not, buffers).

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

/** The replicas a master lists in INFO replication (`slave0:ip=10.0.0.2,port=6380,state=online`), by address. */
export function parseReplicas(info: ReadonlyMap<string, string>): { address: string; fields: Map<string, string> }[] {
  const replicas: { address: string; fields: Map<string, string> }[] = [];
  for (const [key, value] of info) {
    if (!/^slave\d+$/.test(key)) continue;
    const fields = new Map<string, string>();
    for (const part of value.split(',')) {
      const equals = part.indexOf('=');
      if (equals > 0) fields.set(part.slice(0, equals), part.slice(equals + 1));
    }
    replicas.push({ address: `${fields.get('ip')}:${fields.get('port')}`, fields });
  }
  return replicas;
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

/** The entries of an array reply, each an array that `isEntry` accepts, read by `read` (`int` reads an integer). */
function parseEntries<T>(
  reply: unknown,
  command: string,
  isEntry: (entry: unknown[]) => boolean,
  read: (entry: unknown[], int: (value: unknown) => number) => T,
): T[] {
  if (!Array.isArray(reply)) throw new UnexpectedReplyError(command, reply);
  const int = (value: unknown) => toInteger(value, command, reply);
  return reply.map((entry: unknown) => {
    if (!Array.isArray(entry) || !isEntry(entry)) throw new UnexpectedReplyError(command, reply);
    return read(entry, int);
  });
}

/** SLOWLOG GET: `[id, timestamp (Unix s), microseconds, [args…], client, name]` each. */
export function parseSlowlog(reply: unknown) {
  return parseEntries(
    reply,
    'SLOWLOG GET',
    (entry) => entry.length >= 4 && Array.isArray(entry[3]),
    (entry, int) => ({
      id: int(entry[0]),
      timestamp: int(entry[1]),
      durationUs: int(entry[2]),
      args: (entry[3] as unknown[]).map(toText),
      client: entry[4] === undefined ? '' : toText(entry[4]),
    }),
  );
}
export type SlowlogEntry = ReturnType<typeof parseSlowlog>[number];

/** LATENCY LATEST: `[event, timestamp (Unix s) of the latest spike, latest ms, max ms]` each. */
export function parseLatencyLatest(reply: unknown) {
  return parseEntries(
    reply,
    'LATENCY LATEST',
    (entry) => entry.length >= 4,
    (entry, int) => ({
      event: toText(entry[0]),
      timestamp: int(entry[1]),
      latestMs: int(entry[2]),
      maxMs: int(entry[3]),
    }),
  );
}
export type LatencyEvent = ReturnType<typeof parseLatencyLatest>[number];

/** CLUSTER SLOTS: `[from, to, [host, port, id, …], replicas…]` each, as a range and its master's address. */
export function parseClusterSlots(reply: unknown) {
  return parseEntries(
    reply,
    'CLUSTER SLOTS',
    (entry) => entry.length >= 3 && Array.isArray(entry[2]),
    (entry, int) => {
      const [host, port] = entry[2] as unknown[];
      return { from: int(entry[0]), to: int(entry[1]), master: `${toText(host)}:${toText(port)}` };
    },
  );
}

/** CLUSTER NODES: `<id> <ip:port@cport> <flags> …` per line, the address without the cluster bus port. */
export function parseClusterNodes(reply: unknown): { id: string; address: string; flags: string[] }[] {
  return toText(reply)
    .split(/\r?\n/)
    .filter((line) => line.trim().length > 0)
    .map((line) => {
      const [id, address = '', flags = ''] = line.trim().split(' ');
      return { id, address: address.split('@')[0].split(',')[0], flags: flags.split(',') };
    });
}
