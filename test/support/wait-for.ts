import { inspect } from 'node:util';
import { sleep } from './sleep';

export interface WaitOptions {
  /** Give up after this long. Default 5000. */
  timeoutMs?: number;
  /** Pause between two reads. Default 20. */
  intervalMs?: number;
}

/**
 * Reads until `done` accepts what `read` returned, and returns that value: a test waits for the
 * condition instead of sleeping for a guessed time. A read that throws counts as not done yet (a
 * node that is restarting refuses connections for a while). Throws after `timeoutMs`, naming the
 * last value or error read.
 */
export async function waitFor<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  { timeoutMs = 5000, intervalMs = 20 }: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let last: string;
    try {
      const value = await read();
      if (done(value)) return value;
      last = `last value: ${inspect(value, { depth: 4 })}`;
    } catch (error) {
      last = `last read failed: ${(error as Error).message}`;
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; ${last}`);
    await sleep(intervalMs);
  }
}

/** Waits until `condition` resolves to true (see {@link waitFor}). */
export async function waitUntil(condition: () => boolean | Promise<boolean>, options?: WaitOptions): Promise<void> {
  await waitFor(condition, (met) => met, options);
}
