import type Redis from 'ioredis';

/** One loaded library, as FUNCTION LIST WITHCODE lists it. */
export interface LibraryInfo {
  name: string;
  functions: string[];
  code: string;
}

/**
 * FUNCTION LIST WITHCODE, read independently of the package's own parser. The client must speak
 * RESP2 (maps as flat pairs).
 */
export async function listLibraries(client: Redis): Promise<LibraryInfo[]> {
  const reply = (await client.call('FUNCTION', 'LIST', 'WITHCODE')) as unknown[][];
  return reply.map((flat) => {
    const lib = pairs(flat);
    return {
      name: String(lib.library_name),
      functions: (lib.functions as unknown[][]).map((fn) => String(pairs(fn).name)),
      code: String(lib.library_code),
    };
  });
}

/** The names of the loaded libraries, sorted. */
export async function libraryNames(client: Redis): Promise<string[]> {
  return (await listLibraries(client)).map((library) => library.name).sort();
}

/** `calls` and `failed_calls` of one command (`fcall`, `function|load`) from INFO commandstats; 0 when never run. */
export async function commandStats(client: Redis, command: string): Promise<{ calls: number; failed: number }> {
  const info = await client.info('commandstats');
  const line = new RegExp(`^cmdstat_${command.replace('|', '\\|')}:(.*)$`, 'm').exec(info)?.[1] ?? '';
  const field = (name: string) => Number(new RegExp(`(?:^|,)${name}=(\\d+)`).exec(line)?.[1] ?? 0);
  return { calls: field('calls'), failed: field('failed_calls') };
}

function pairs(flat: unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i < flat.length; i += 2) record[String(flat[i])] = flat[i + 1];
  return record;
}
