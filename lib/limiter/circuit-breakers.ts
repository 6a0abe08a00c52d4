import { CircuitBreaker } from './circuit-breaker';

/** One circuit breaker per node: a dead master pauses the calls for its slots only. */
export class CircuitBreakers {
  private readonly byNode = new Map<string, CircuitBreaker>();

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
    private readonly nodeOf: (key: string) => string,
  ) {}

  /** The breaker of the node serving `key` (of the whole connection when no key is given). */
  for(key?: string): CircuitBreaker {
    const node = key === undefined ? '' : this.nodeOf(key);
    let breaker = this.byNode.get(node);
    if (!breaker) {
      breaker = new CircuitBreaker(this.threshold, this.cooldownMs);
      this.byNode.set(node, breaker);
    }
    return breaker;
  }

  /** Closes every breaker, e.g. when the connection is ready again. */
  resetAll(): void {
    for (const breaker of this.byNode.values()) breaker.reset();
  }
}
