/*
 * Telling Valkey from Redis by INFO server. Valkey 8 reports `redis_version:7.2.4` (the Redis release it
 * is compatible with) beside `server_name:valkey` and `valkey_version:8.0.1`; only those two tell them
 * apart. The replies of real servers, through every client configuration, are checked in
 * client-compat.spec.ts; these are the shapes and the edge cases.
 */
import { UnexpectedReplyError } from '../../lib';
import { hasFunctionsByVersion, parseServerInfo } from '../../lib/redis/server-info';
import { isEngineNotFound, isUnknownCommand } from '../../lib/redis/reply';

const VALKEY_8 = [
  '# Server',
  'redis_version:7.2.4',
  'server_name:valkey',
  'valkey_version:8.0.1',
  'redis_git_sha1:00000000',
  'server_mode:standalone',
  '',
].join('\r\n');
const REDIS_7 = ['# Server', 'redis_version:7.0.15', 'redis_git_sha1:00000000', 'redis_mode:standalone', ''].join(
  '\r\n',
);

describe('parseServerInfo', () => {
  it.each<[string, unknown, { name: string; version: string }]>([
    ['Valkey 8, as a string', VALKEY_8, { name: 'valkey', version: '8.0.1' }],
    ['Redis 7, as a string', REDIS_7, { name: 'redis', version: '7.0.15' }],
    ['Valkey 8, as a buffer', Buffer.from(VALKEY_8), { name: 'valkey', version: '8.0.1' }],
    ['Valkey 8, as a String object', new String(VALKEY_8), { name: 'valkey', version: '8.0.1' }],
    [
      'Redis 6, with \\n line ends',
      '# Server\nredis_version:6.2.14\nredis_mode:standalone\n',
      { name: 'redis', version: '6.2.14' },
    ],
    [
      'a full INFO (every section)',
      `${VALKEY_8}\r\n# Clients\r\nconnected_clients:1\r\n`,
      { name: 'valkey', version: '8.0.1' },
    ],
    [
      'Valkey without valkey_version',
      'redis_version:7.2.4\r\nserver_name:valkey\r\n',
      { name: 'valkey', version: '7.2.4' },
    ],
  ])('%s', (_label, reply, expected) => {
    expect(parseServerInfo(reply)).toEqual(expected);
  });

  it('refuses a reply without any version', () => {
    expect(() => parseServerInfo('# Server\r\nredis_mode:standalone\r\n')).toThrow(UnexpectedReplyError);
  });

  it('Functions by version: Redis from 7, every Valkey', () => {
    expect(hasFunctionsByVersion({ name: 'redis', version: '6.2.14' })).toBe(false);
    expect(hasFunctionsByVersion({ name: 'redis', version: '7.0.0' })).toBe(true);
    expect(hasFunctionsByVersion({ name: 'valkey', version: '7.2.5' })).toBe(true);
    expect(hasFunctionsByVersion({ name: 'valkey', version: '9.1.0' })).toBe(true);
  });
});

describe('the errors of a server without functions', () => {
  it.each([
    ["ERR unknown command 'function', with args beginning with: 'list' ", true],
    ["ERR unknown command 'FUNCTION', with args beginning with: ", true],
    ['ERR unknown command `FUNCTION`, with args beginning with: `LIST`, ', true],
    ["ERR unknown command 'functions', with args beginning with: ", false],
    ["ERR unknown subcommand 'stats'. Try FUNCTION HELP.", false],
    ['ERR Function not found', false],
  ])('%s: unknown FUNCTION command %s', (message, expected) => {
    expect(isUnknownCommand(new Error(message), 'FUNCTION')).toBe(expected);
  });

  it("recognises FUNCTION LOAD without a Lua engine (Engine 'LUA' not found)", () => {
    expect(isEngineNotFound(new Error("ERR Engine 'LUA' not found"))).toBe(true);
    expect(isEngineNotFound(new Error('ERR Function not found'))).toBe(false);
  });
});
