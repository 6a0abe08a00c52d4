import calculateSlot from 'cluster-key-slot';
// The timers module's own setImmediate: fake timers (jest, sinon) replace the global one, and a test
// that fakes timers must not leave batched decisions waiting forever.
import { setImmediate } from 'node:timers';
import { joined } from '../core/call-arguments';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { BatchFunction } from '../core/function-contract';
import { errorKindOf, isUnanswered } from '../redis/error-kind';
import type { ActiveVersion } from './function-routing';
import type { Decision } from './decision';
import type { DecisionChannel } from './decision-channel';
import type { RedisCall } from './redis-call-policy';

/** Several decisions in one call of the version's batch function; a failed batch goes back to the batcher. */
class BatchCall implements RedisCall<MultiRateLimitDecision[]> {
  private readonly keyCount: number;
  private readonly keysAndArguments: readonly (string | number)[];

  constructor(
    private readonly batcher: DecisionBatcher,
    private readonly version: ActiveVersion,
    private readonly batch: BatchFunction,
    private readonly decisions: readonly Decision[],
  ) {
    const keys = batch.keys ? batch.keys(decisions) : keysOf(decisions);
    this.keyCount = keys.length;
    this.keysAndArguments = joined(keys, batch.arguments(decisions));
  }

  send(): Promise<unknown> {
    return this.version.runner.run(this.batch.name, this.keyCount, this.keysAndArguments, false);
  }

  recover(error: unknown): Promise<unknown> | undefined {
    return this.version.runner.recover?.(error, this.batch.name, this.keyCount, this.keysAndArguments, false);
  }

  parse(reply: unknown): MultiRateLimitDecision[] {
    return this.version.reader.batch(reply, this.decisions);
  }

  resolve(outcomes: MultiRateLimitDecision[]): void {
    for (let i = 0; i < this.decisions.length; i++) this.decisions[i].resolve(outcomes[i]);
  }

  reject(error: unknown): void {
    this.batcher.afterFailure(this.decisions, error);
  }
}

/** KEYS of a batch whose function takes the decisions' keys as they are: concatenated, in order. */
function keysOf(decisions: readonly Decision[]): string[] {
  const keys: string[] = [];
  for (const decision of decisions) for (const key of decision.keys) keys.push(key);
  return keys;
}

/** Decisions that can share one call: same version and, on a cluster, same slot. */
type Lanes = Map<ActiveVersion, Map<number, Decision[]>>;

/**
 * Sends decisions that arrive together as one call of the version's batch function: while calls are in
 * flight, new decisions wait for the event loop's turn (`setImmediate`) and go as one call per version
 * and slot, at most `maxSize`; with nothing in flight a decision goes at once. A batch Redis answers
 * with an error is retried decision by decision (same request ids, so nothing counts twice).
 */
export class DecisionBatcher {
  private readonly lanes: Lanes = new Map();
  private flushScheduled = false;

  constructor(
    private readonly channel: DecisionChannel,
    /** Most decisions in one call; 1 sends every decision on its own. */
    private readonly maxSize: number,
  ) {}

  /** Decides `decision` by its version, at once or in the next batch; the decision is told the outcome. */
  decide(decision: Decision): void {
    const version = decision.version as ActiveVersion;
    const mayWait =
      this.maxSize > 1 && version.contract.batch !== undefined && (this.flushScheduled || this.channel.busy());
    // While the node fails, a decision goes at once (fail fast, or the breaker's probe), never held.
    if (!mayWait || !this.channel.healthy(decision.keys[0])) this.channel.send(decision, decision.keys[0]);
    else this.enqueue(version, decision);
  }

  private enqueue(version: ActiveVersion, decision: Decision): void {
    const slot = this.channel.clustered ? calculateSlot(decision.keys[0]) : 0;
    let bySlot = this.lanes.get(version);
    if (!bySlot) this.lanes.set(version, (bySlot = new Map<number, Decision[]>()));
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

  private send(version: ActiveVersion, lane: Decision[]): void {
    // A lane only forms for a version with a batch function; `!batch` is there for the type.
    const { batch } = version.contract;
    if (!batch || lane.length === 1 || !this.channel.healthy(lane[0].keys[0])) {
      this.sendEach(lane);
      return;
    }
    this.channel.send(new BatchCall(this, version, batch, lane), lane[0].keys[0], lane.length);
  }

  /** Redis answered a batch with an error: each decision on its own. Redis did not answer: they all failed. */
  afterFailure(lane: readonly Decision[], error: unknown): void {
    if (isUnanswered(error) || errorKindOf(error) === 'function_not_loaded') {
      for (const decision of lane) decision.reject(error);
      return;
    }
    this.sendEach(lane);
  }

  /** Each decision in a call of its own. */
  private sendEach(lane: readonly Decision[]): void {
    for (const decision of lane) this.channel.send(decision, decision.keys[0]);
  }
}
