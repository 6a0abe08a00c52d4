import Redis from 'ioredis';
import { readLibrarySource, toScript } from '../../lib/redis/lua-library';

const BATCH_FUNCTION = 'sliding_allow_many_v2';
const BATCH_SCRIPT = `script:${toScript(readLibrarySource('rate_limit_v2.lua'), BATCH_FUNCTION).sha1}`;

/** One FCALL or EVALSHA a {@link RecordingRedis} was asked to make. */
export interface SentCall {
  /** The function's name, or `script:<sha1>` for EVALSHA. */
  readonly fn: string;
  /** How many keys the call carries. */
  readonly keys: number;
  /** Its keys, then its arguments, as text. */
  readonly args: readonly string[];
}

/** An ioredis client that records every FCALL and EVALSHA it is asked to make, in order. */
export class RecordingRedis extends Redis {
  readonly sent: SentCall[] = [];

  override fcall(...args: unknown[]): Promise<unknown> {
    this.record(String(args[0]), args);
    return (super.fcall as (...a: unknown[]) => Promise<unknown>)(...args);
  }

  override evalsha(...args: unknown[]): Promise<unknown> {
    this.record(`script:${String(args[0])}`, args);
    return (super.evalsha as (...a: unknown[]) => Promise<unknown>)(...args);
  }

  /** The calls of the v2 batch function, as function or script. */
  batchCalls(): SentCall[] {
    return this.sent.filter((call) => call.fn === BATCH_FUNCTION || call.fn === BATCH_SCRIPT);
  }

  /** The decisions of each call of the v2 batch function: its limit keys (one-limit decisions), override keys aside. */
  batches(): number[] {
    return this.batchCalls().map(
      (call) => call.args.slice(0, call.keys).filter((key) => !key.includes('|override')).length,
    );
  }

  /**
   * How many calls repeated an earlier one exactly: same function, keys and arguments. A decision's
   * request id is unique, so these are retries.
   */
  repeats(): number {
    return this.sent.length - new Set(this.sent.map((call) => JSON.stringify([call.fn, call.args]))).size;
  }

  clear(): void {
    this.sent.length = 0;
  }

  private record(fn: string, args: unknown[]): void {
    this.sent.push({ fn, keys: Number(args[1]), args: args.slice(2).map(String) });
  }
}
