import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { setResponseHeader } from '../../lib/nest/rate-limit-headers';

const HEADERS: [name: string, value: string][] = [
  ['x-ratelimit-limit', '5'],
  ['x-ratelimit-remaining', '4'],
];

/** Sets each header with the guard's default writer. */
function writeHeaders(response: unknown, headers: [name: string, value: string][]): void {
  for (const [name, value] of headers) setResponseHeader(response, name, value);
}

/** A real Node response, as Express hands it to a guard (Express only swaps its prototype). */
function nodeResponse(): ServerResponse {
  const response = new ServerResponse(new IncomingMessage(new Socket()));
  Object.setPrototypeOf(response, Object.create(ServerResponse.prototype) as object);
  return response;
}

describe('setResponseHeader', () => {
  it('sets every header on a Node response whose prototype was swapped', () => {
    const response = nodeResponse();
    writeHeaders(response, HEADERS);
    expect(response.getHeaders()).toEqual({ 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '4' });
  });

  it('leaves a Node response whose head is gone alone, without throwing', () => {
    const response = nodeResponse();
    response.writeHead(200, { 'content-length': '0' });
    expect(() => writeHeaders(response, HEADERS)).not.toThrow();
    expect(response.getHeader('x-ratelimit-limit')).toBeUndefined();
  });

  it('still throws what setHeader throws for any other reason', () => {
    expect(() => writeHeaders(nodeResponse(), [['x-bad', 'line\nbreak']])).toThrow(/Invalid character/);
  });

  it('uses header() on a Fastify-shaped reply, and nothing once it is sent', () => {
    const set: string[] = [];
    const reply = { sent: false, header: (name: string, value: string) => set.push(`${name}=${value}`) };
    writeHeaders(reply, HEADERS);
    expect(set).toEqual(['x-ratelimit-limit=5', 'x-ratelimit-remaining=4']);
    reply.sent = true;
    writeHeaders(reply, HEADERS);
    expect(set).toHaveLength(2);
  });

  it('ignores what is not a response', () => {
    expect(() => writeHeaders(undefined, HEADERS)).not.toThrow();
    expect(() => writeHeaders('response', HEADERS)).not.toThrow();
  });
});
