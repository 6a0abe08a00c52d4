import Redis from 'ioredis';

/** What one function call left on one of its keys, seen in the same transaction. */
export interface TtlObservation {
  key: string;
  /** PTTL right after the call: ms, -1 (no TTL set by the call), -2 (no key). */
  pttl: number;
  /** The same as Redis wrote it, exact beyond 2^53. */
  pttlText: string;
  /**
   * TIME before and after the transaction fell in the same millisecond, so PTTL shows exactly the
   * PEXPIRE the function sent; otherwise it may read one less.
   */
  exact: boolean;
  /** Milliseconds between TIME before and after the transaction. */
  spanMs: number;
}

const SCRIPT_COMMANDS = { fcall: 'FCALL', fcall_ro: 'FCALL_RO', evalsha: 'EVALSHA', eval: 'EVAL' } as const;

/**
 * An ioredis client for a server the test owns, whose keys expire on the test's clock instead of
 * Redis' wall clock — which is what lets a limiter on real Redis be compared with the in-memory
 * model while the test moves time by hand (a 5 ms window would otherwise expire in real time
 * between two steps that are "the same millisecond", and a key the model has expired would live on
 * in Redis).
 *
 * Every FCALL / FCALL_RO / EVALSHA / EVAL (what the limiter's runners send) runs in a MULTI that
 * also reads PTTL of each of its keys and then PERSISTs them: the TTL the Lua set is recorded in
 * {@link observations}, and {@link expireUpTo} deletes keys when the test's clock passes their
 * expiry. Nothing else about the calls changes: same arguments, same replies, same errors.
 */
export class VirtualTimeRedis extends Redis {
  /** TTLs seen since the last {@link takeObservations}. */
  private observed: TtlObservation[] = [];
  /** Expiry of each key on the test's clock (ms), kept by the test from the TTLs observed. */
  readonly expiresAt = new Map<string, number>();

  override fcall(...args: unknown[]): Promise<unknown> {
    return this.observe(SCRIPT_COMMANDS.fcall, args);
  }

  override fcall_ro(...args: unknown[]): Promise<unknown> {
    return this.observe(SCRIPT_COMMANDS.fcall_ro, args);
  }

  override evalsha(...args: unknown[]): Promise<unknown> {
    return this.observe(SCRIPT_COMMANDS.evalsha, args);
  }

  override eval(...args: unknown[]): Promise<unknown> {
    return this.observe(SCRIPT_COMMANDS.eval, args);
  }

  /** Runs a script command with the TTL bookkeeping; `args` as FCALL takes them (name/script, numkeys, keys…, argv…). */
  async observe(command: string, args: readonly unknown[]): Promise<unknown> {
    const keys = args.slice(2, 2 + Number(args[1])).map(String);
    const transaction = this.multi()
      .time()
      .call(command, ...(args as (string | number)[]));
    for (const key of new Set(keys)) transaction.pttl(key).persist(key);
    transaction.time();
    const results = (await transaction.exec()) ?? [];
    const [timeBefore, [error, reply]] = results;
    const spanMs = millis(results[results.length - 1][1]) - millis(timeBefore[1]);
    const exact = spanMs === 0;
    [...new Set(keys)].forEach((key, i) => {
      const pttlText = String(results[2 + 2 * i][1]);
      this.observed.push({ key, pttl: Number(pttlText), pttlText, exact, spanMs });
    });
    if (error) throw error;
    return reply;
  }

  /** The TTLs seen since the last call, and forgets them. */
  takeObservations(): TtlObservation[] {
    const observed = this.observed;
    this.observed = [];
    return observed;
  }

  /** Deletes every tracked key whose expiry `redisNowMs` has passed (Redis: expired when now > expiry). */
  async expireUpTo(redisNowMs: number): Promise<void> {
    for (const [key, at] of this.expiresAt) {
      if (redisNowMs > at) {
        await this.del(key);
        this.expiresAt.delete(key);
      }
    }
  }
}

function millis(time: unknown): number {
  const [seconds, micros] = time as [string, string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
