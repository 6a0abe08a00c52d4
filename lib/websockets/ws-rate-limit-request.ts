import type { ExecutionContext } from '@nestjs/common';
import type { RateLimitRequest } from 'nestjs-sliding-limit';

/**
 * What the key templates, key functions and cost functions of a gateway handler see in place of an
 * HTTP request: the client's handshake (socket.io) or upgrade request (`ws`), plus the message.
 */
export interface WsRateLimitRequest extends RateLimitRequest {
  /**
   * The address the connection came from (socket.io's `handshake.address`, the `ws` socket's peer): the
   * `ip` key part and the fallback of missing parts. Behind a proxy it is the proxy's: key on
   * `header:x-forwarded-for` or override `getTracker` when you trust the proxy.
   */
  ip?: string;
  /** The handshake's (socket.io) or the upgrade request's (`ws`, kept with {@link rememberUpgradeRequest}) headers. */
  headers?: Record<string, string | string[] | undefined>;
  /** The handshake's (socket.io) or the kept upgrade request's (`ws`) query parameters: `query:token` keys. */
  query?: Record<string, unknown>;
  /** `client.data.user` (socket.io, where an auth middleware usually puts it) or `client.user`. */
  user?: unknown;
  /** The message's payload, as `data`; here so `body:<path>` templates read it. */
  body: unknown;
  /** The message's payload. */
  data: unknown;
  /** The message name of `@SubscribeMessage`. */
  pattern?: string;
  /** The socket.io `Socket` or `ws` `WebSocket` the message came on. */
  client: unknown;
}

/** The parts of an HTTP upgrade request (Node's `IncomingMessage`) a `ws` client's key can use. */
export interface UpgradeRequestLike {
  /** The request's headers, as Node gives them. */
  headers?: Record<string, string | string[] | undefined>;
  /** The request's path and query, e.g. `/?token=abc`. */
  url?: string;
  /** The connection, for the peer's address. */
  socket?: { remoteAddress?: string };
}

/** Upgrade requests kept per `ws` client: the socket does not keep it itself. */
const upgradeRequests = new WeakMap<object, UpgradeRequestLike>();

/** Keeps a `ws` client's upgrade request, so its headers and query reach the keys: call it from `handleConnection`. */
export function rememberUpgradeRequest(client: object, request: UpgradeRequestLike): void {
  upgradeRequests.set(client, request);
}

interface SocketIoLike {
  handshake?: {
    address?: unknown;
    headers?: Record<string, string | string[] | undefined>;
    query?: Record<string, unknown>;
  };
  data?: unknown;
  user?: unknown;
  _socket?: { remoteAddress?: unknown };
}

export function buildWsRateLimitRequest(context: ExecutionContext): WsRateLimitRequest {
  const ws = context.switchToWs();
  const client = ws.getClient<unknown>();
  const data = ws.getData<unknown>();
  // Nest appends the handler's message name to the arguments of every gateway call.
  const pattern = ws.getPattern();
  const request: WsRateLimitRequest = {
    body: data,
    data,
    pattern: typeof pattern === 'string' ? pattern : undefined,
    client,
  };
  if (typeof client !== 'object' || client === null) return request;
  const socket = client as SocketIoLike;
  const upgrade = upgradeRequests.get(client);
  if (socket.handshake) {
    request.ip = nonEmpty(socket.handshake.address);
    request.headers = socket.handshake.headers;
    request.query = socket.handshake.query;
  } else {
    // A `ws` socket: `_socket` is the net.Socket under it, the only place it keeps the peer's address.
    request.ip = nonEmpty(upgrade?.socket?.remoteAddress) ?? nonEmpty(socket._socket?.remoteAddress);
    if (upgrade) {
      request.headers = upgrade.headers;
      request.query = queryOf(upgrade.url);
    }
  }
  const fromData = ownUser(socket.data);
  request.user = fromData !== undefined ? fromData : socket.user;
  return request;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function ownUser(data: unknown): unknown {
  if (typeof data !== 'object' || data === null || !Object.prototype.hasOwnProperty.call(data, 'user'))
    return undefined;
  return (data as { user?: unknown }).user;
}

function queryOf(url: string | undefined): Record<string, unknown> | undefined {
  if (url === undefined) return undefined;
  // No prototype: a parameter named __proto__ stays a plain entry.
  const query = Object.create(null) as Record<string, unknown>;
  try {
    for (const [name, value] of new URL(url, 'ws://localhost').searchParams) query[name] = value;
  } catch {
    return undefined;
  }
  return query;
}
