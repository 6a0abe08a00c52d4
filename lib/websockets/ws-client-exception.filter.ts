import { Catch, type ArgumentsHost } from '@nestjs/common';
import { BaseWsExceptionFilter } from '@nestjs/websockets';

/** The parts of a `ws` WebSocket this filter uses. */
interface PlainWebSocket {
  readyState: number;
  send(message: string): void;
}

/** `WebSocket.OPEN` of the `ws` package (and of the WebSocket standard). */
const OPEN = 1;

/**
 * Nest's default WebSocket exception filter, made to reach clients of `@nestjs/platform-ws` too.
 *
 * `BaseWsExceptionFilter` answers an exception with `client.emit('exception', error)`: on a socket.io
 * socket that sends an event, but a `ws` WebSocket is a Node EventEmitter, so `emit` only calls
 * listeners in the server and the client is told nothing. For those clients this filter sends the
 * same object as a message in the `WsAdapter`'s format, `{"event":"exception","data":<error>}`;
 * socket.io clients get exactly what the base filter sends them.
 *
 * Register it with `@UseFilters(new WsClientExceptionFilter())` on a gateway.
 */
@Catch()
export class WsClientExceptionFilter<TError = unknown> extends BaseWsExceptionFilter<TError> {
  override catch(exception: TError, host: ArgumentsHost): void {
    const ws = host.switchToWs();
    const client = ws.getClient<unknown>();
    if (!isPlainWebSocket(client)) return super.catch(exception, host);
    const relay = {
      emit: (event: string, data: unknown): void => {
        if (client.readyState === OPEN) client.send(JSON.stringify({ event, data }));
      },
    };
    this.handleError(relay, exception, { pattern: ws.getPattern(), data: ws.getData<unknown>() });
  }
}

function isPlainWebSocket(client: unknown): client is PlainWebSocket {
  if (typeof client !== 'object' || client === null || 'handshake' in client) return false;
  const socket = client as Partial<PlainWebSocket>;
  return typeof socket.send === 'function' && typeof socket.readyState === 'number';
}
