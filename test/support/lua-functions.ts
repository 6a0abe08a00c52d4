import type Redis from 'ioredis';
import { readLibrarySource } from '../../lib/redis/lua-library';
import { rejectionOf } from './rejection';

/**
 * Text of a bundled library as FUNCTION LOAD receives it, read by the package's own reader: assembled
 * from its parts in lib/ here; the built package reads dist/, where the build wrote it assembled.
 */
export function librarySource(version: 'v1' | 'v2'): string {
  return readLibrarySource(`rate_limit_${version}.lua`);
}

/**
 * Loads every bundled library on a server unless they are there already (same code).
 * Tests call functions directly with this, without going through the limiter.
 */
export async function ensureLibraries(client: Redis): Promise<void> {
  for (const version of ['v1', 'v2'] as const) {
    try {
      await client.call('FUNCTION', 'LOAD', librarySource(version));
    } catch (error) {
      if (!/already exists/.test((error as Error).message)) throw error;
    }
  }
}

/** The error message of a rejected promise (fails the test if it resolves). */
export async function errorMessageOf(promise: Promise<unknown>): Promise<string> {
  return ((await rejectionOf(promise)) as Error).message;
}
