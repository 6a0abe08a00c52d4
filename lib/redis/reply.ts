import { UnexpectedReplyError } from '../core/errors/unexpected-reply.error';

// Every reply shape a user's client may produce is accepted: RESP2, RESP3 mapped or not, `stringNumbers`.

/** Reads an integer that may arrive as a number, a numeric string or a bigint. */
export function toInteger(value: unknown, command: string, reply: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return Number(value);
  if (typeof value === 'bigint') return Number(value);
  throw new UnexpectedReplyError(command, reply);
}

/**
 * Checks that a function reply is an array of `length` elements and returns it as it is, for a reader
 * that takes each integer with {@link toInteger} as it goes (no array of numbers in between).
 */
export function replyOfLength(reply: unknown, length: number, command: string): readonly unknown[] {
  if (!Array.isArray(reply) || reply.length !== length) throw new UnexpectedReplyError(command, reply);
  return reply;
}

/** Checks that a function reply is an array of `length` integers and returns it as numbers. */
export function toIntegerArray(reply: unknown, length: number, command: string): number[] {
  const elements = replyOfLength(reply, length, command);
  const values = new Array<number>(length);
  for (let i = 0; i < length; i++) values[i] = toInteger(elements[i], command, reply);
  return values;
}

/** A RESP map as a plain object, whether it arrived as flat pairs, a Map or an object. */
export function toRecord(value: unknown, command: string): Record<string, unknown> {
  if (Array.isArray(value)) {
    if (value.length % 2 !== 0) throw new UnexpectedReplyError(command, value);
    const record: Record<string, unknown> = {};
    for (let i = 0; i < value.length; i += 2) record[String(value[i])] = value[i + 1];
    return record;
  }
  if (value instanceof Map) return Object.fromEntries(value as Map<string, unknown>);
  if (typeof value === 'object' && value !== null) return value as Record<string, unknown>;
  throw new UnexpectedReplyError(command, value);
}

/** Text of a bulk or verbatim string reply. */
export function toText(value: unknown): string {
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return String(value);
}

/** One library of a FUNCTION LIST reply. */
export interface LoadedLibrary {
  name: string;
  functions: string[];
  /** Present when listed WITHCODE. */
  code?: string;
}

/** Parses `FUNCTION LIST [WITHCODE]`. */
export function parseFunctionList(reply: unknown): LoadedLibrary[] {
  const command = 'FUNCTION LIST';
  if (!Array.isArray(reply)) throw new UnexpectedReplyError(command, reply);
  return reply.map((entry) => {
    const library = toRecord(entry, command);
    const functions = library.functions;
    if (!Array.isArray(functions)) throw new UnexpectedReplyError(command, reply);
    return {
      name: toText(library.library_name),
      functions: functions.map((fn) => toText(toRecord(fn, command).name)),
      code: library.library_code === undefined ? undefined : toText(library.library_code),
    };
  });
}

/** Epoch milliseconds from a `TIME` reply ([seconds, microseconds] as strings or numbers). */
export function parseServerTimeMs(reply: unknown): number {
  if (!Array.isArray(reply) || reply.length !== 2) throw new UnexpectedReplyError('TIME', reply);
  const seconds = toInteger(toText(reply[0]), 'TIME', reply);
  const micros = toInteger(toText(reply[1]), 'TIME', reply);
  return seconds * 1000 + Math.floor(micros / 1000);
}

/** An error's message, or the value as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Redis saying a library of that name is not loaded (FUNCTION DELETE of an absent library). */
export function isLibraryNotFound(error: unknown): boolean {
  return /library not found/i.test(messageOf(error));
}

/** "ERR Function not found": Redis restarted empty, FUNCTION FLUSH, or a node that never had it. */
export function isFunctionNotFound(error: unknown): boolean {
  return /Function not found/i.test(messageOf(error));
}

/** The script is not in this node's script cache. */
export function isNoScript(error: unknown): boolean {
  return messageOf(error).startsWith('NOSCRIPT');
}

/** v2's refusal of a caller clock that lags too far behind a key's newest entry. */
export function isClockSkew(error: unknown): boolean {
  return messageOf(error).startsWith('CLOCKSKEW');
}

/** FUNCTION LOAD of a library that another process loaded first. */
export function isLibraryAlreadyExists(error: unknown): boolean {
  return /Library .* already exists/i.test(messageOf(error));
}

/** FUNCTION LOAD of a library whose function name another library registered already. */
export function isFunctionNameTaken(error: unknown): boolean {
  return /Function .* already exists/i.test(messageOf(error));
}

/** A command the server does not know: never had, renamed or disabled (`rename-command X ""`). */
export function isUnknownCommand(error: unknown, command: string): boolean {
  // Redis 7 and Valkey quote with '', Redis 6 with ``, in the case the client sent.
  return new RegExp(`unknown command ['\`"]?${command}['\`"]?(,|\\s|$)`, 'i').test(messageOf(error));
}

/** FUNCTION LOAD of a library whose engine (`#!lua`) the server lacks: "Engine 'LUA' not found". */
export function isEngineNotFound(error: unknown): boolean {
  return /Engine .* not found/i.test(messageOf(error));
}
