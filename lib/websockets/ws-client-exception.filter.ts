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
 * Nest's default WebSocket exception filter, made to reach `@nestjs/platform-ws` clients too (a `ws`
 * socket's `emit` tells the client nothing): they get `{"event":"exception","data":<error>}`.
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
