import calculateSlot from 'cluster-key-slot';
// The timers module's own setImmediate: fake timers (jest, sinon) replace the global one, and a test
// that fakes timers must not leave batched decisions waiting forever.
import { setImmediate } from 'node:timers';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { AllowCall, BatchFunction } from '../core/function-contract';
import type { LuaRunner } from '../core/lua-runner';
import { errorKindOf, isUnanswered } from '../redis/error-kind';
import type { ActiveVersion } from './function-routing';
import type { DecisionChannel } from './decision-channel';
import { PolicedCall, type CallSettlers } from './redis-call-policy';

/**
 * One call of a version's function as the call policy makes it: sent, sent again as it is for a
 * retry, recovered by the runner (a library reloaded), its reply read, and the batcher told when it
 * is over. One object per call, which the policy keeps its state on: no closure is made per decision.
 */
abstract class FunctionCall<T> extends PolicedCall<T> {
  constructor(
    private readonly batcher: DecisionBatcher,
    private readonly runner: LuaRunner,
    private readonly functionName: string,
    private readonly keys: readonly string[],
    private readonly args: readonly (string | number)[],
  ) {
    super();
  }

  send(): Promise<unknown> {
    return this.runner.run(this.functionName, this.keys, this.args, false);
  }

  override recover(error: unknown): Promise<unknown> | undefined {
    return this.runner.recover?.(error, this.functionName, this.keys, this.args, false);
  }

  override done(): void {
    this.batcher.callSettled();
  }
}

/** One decision in a call of its own: the allow function, its reply read into the caller's decision. */
class SingleDecisionCall extends FunctionCall<MultiRateLimitDecision> {
  constructor(
    batcher: DecisionBatcher,
    private readonly version: ActiveVersion,
    private readonly call: AllowCall,
  ) {
    const { contract } = version;
    // A version that reads overrides takes their keys after the limit keys.
    const keys = contract.allowKeys ? contract.allowKeys(call) : call.keys;
    super(batcher, version.runner, contract.allowFunction, keys, contract.allowArguments(call));
  }

  parse(reply: unknown): MultiRateLimitDecision {
    return this.version.reader.allow(reply, this.call);
  }
}

/** Several decisions in one call of the version's batch function: one decision each, in order. */
class BatchCall extends FunctionCall<MultiRateLimitDecision[]> {
  constructor(
    batcher: DecisionBatcher,
    private readonly version: ActiveVersion,
    batch: BatchFunction,
    private readonly calls: readonly AllowCall[],
  ) {
    super(batcher, version.runner, batch.name, batch.keys ? batch.keys(calls) : keysOf(calls), batch.arguments(calls));
  }

  parse(reply: unknown): MultiRateLimitDecision[] {
    return this.version.reader.batch(reply, this.calls);
  }
}

/** KEYS of a batch whose function takes the calls' keys as they are: concatenated, in order. */
function keysOf(calls: readonly AllowCall[]): string[] {
  const keys: string[] = [];
  for (const call of calls) for (const key of call.keys) keys.push(key);
  return keys;
}

/** A decision waiting for its batch, and who is told its outcome. */
interface QueuedDecision {
  readonly call: AllowCall;
  readonly settlers: CallSettlers<MultiRateLimitDecision>;
}

/** Decisions that can share one call: same version and, on a cluster, same slot. */
type Lanes = Map<ActiveVersion, Map<number, QueuedDecision[]>>;

/**
 * Sends decisions that arrive together as one call of the version's batch function.
 *
 * In this process most of a decision's cost is the call around it: building and parsing a command
 * and a system call each way (batched, a decision needs about half the CPU); in Redis,
 * the call's own overhead and argument handling (about a fifth of a decision's time). So while
 * calls are in flight, new decisions wait until the event loop has read everything that is
 * ready (`setImmediate`), and then go as one call per version and slot, at most `maxSize` decisions
 * each. With nothing in flight a decision goes at once: batching never adds latency to a quiet
 * process. The batch function decides each one exactly as the single function would, one after the
 * other, in arrival order.
 *
 * A batch that Redis answers with an error (a CLOCKSKEW of one decision, a key of the wrong type) is
 * retried decision by decision, so each caller gets its own outcome or error; the decisions the batch
 * had recorded already are retries with the same request id then, which never count twice. When
 * Redis did not answer at all, every decision of the batch gets that error (and its failure policy).
 */
export class DecisionBatcher {
  private readonly lanes: Lanes = new Map();
  private inFlight = 0;
  private flushScheduled = false;

  constructor(
    private readonly channel: DecisionChannel,
    /** Most decisions in one call; 1 sends every decision on its own. */
    private readonly maxSize: number,
  ) {}

  /** Decides `call` by `version`, at once or in the next batch; `settlers` is told the outcome. */
  decide(version: ActiveVersion, call: AllowCall, settlers: CallSettlers<MultiRateLimitDecision>): void {
    const mayWait =
      this.maxSize > 1 && version.contract.batch !== undefined && (this.inFlight > 0 || this.flushScheduled);
    // While the node fails, a decision is answered at once (fail fast, or the breaker's probe) rather
    // than held for a batch.
    if (!mayWait || !this.channel.healthy(call.keys[0])) this.sendOne(version, call, settlers);
    else this.enqueue(version, { call, settlers });
  }

  private enqueue(version: ActiveVersion, decision: QueuedDecision): void {
    const slot = this.channel.clustered ? calculateSlot(decision.call.keys[0]) : 0;
    let bySlot = this.lanes.get(version);
    if (!bySlot) this.lanes.set(version, (bySlot = new Map<number, QueuedDecision[]>()));
    const lane = bySlot.get(slot);
    if (!lane) {
      bySlot.set(slot, [decision]);
    } else {
      lane.push(decision);
      if (lane.length >= this.maxSize) {
        bySlot.delete(slot);
        this.send(version, lane);
        return;
      }
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    for (const [version, bySlot] of this.lanes) for (const lane of bySlot.values()) this.send(version, lane);
    this.lanes.clear();
  };

  private send(version: ActiveVersion, lane: QueuedDecision[]): void {
    // A lane only forms for a version with a batch function; `!batch` is there for the type.
    const { batch } = version.contract;
    if (!batch || lane.length === 1 || !this.channel.healthy(lane[0].call.keys[0])) {
      this.sendEach(version, lane);
      return;
    }
    const calls = new Array<AllowCall>(lane.length);
    for (let i = 0; i < lane.length; i++) calls[i] = lane[i].call;
    this.inFlight++;
    this.channel.call(new BatchCall(this, version, batch, calls), calls[0].keys[0], lane.length).then(
      (decisions) => {
        for (let i = 0; i < lane.length; i++) lane[i].settlers.resolve(decisions[i]);
      },
      (error: unknown) => this.afterFailure(version, lane, error),
    );
  }

  /** A call the batcher sent is over, answered or not. */
  callSettled(): void {
    this.inFlight--;
  }

  /** Redis answered with an error: each decision on its own. Redis did not answer: they all failed. */
  private afterFailure(version: ActiveVersion, lane: readonly QueuedDecision[], error: unknown): void {
    if (isUnanswered(error) || errorKindOf(error) === 'function_not_loaded') {
      for (const decision of lane) decision.settlers.reject(error);
      return;
    }
    this.sendEach(version, lane);
  }

  /** Each decision in a call of its own, its caller settled by that call. */
  private sendEach(version: ActiveVersion, lane: readonly QueuedDecision[]): void {
    for (const decision of lane) this.sendOne(version, decision.call, decision.settlers);
  }

  /**
   * One decision in a call of its own: the call policy settles `settlers` with the caller's decision —
   * no promise, async frame or callback of the batcher's own per decision.
   */
  private sendOne(version: ActiveVersion, call: AllowCall, settlers: CallSettlers<MultiRateLimitDecision>): void {
    this.inFlight++;
    this.channel.callInto(new SingleDecisionCall(this, version, call), settlers, call.keys[0]);
  }
}
