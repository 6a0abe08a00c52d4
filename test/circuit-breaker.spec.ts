import { CircuitBreaker } from '../lib/limiter/circuit-breaker';

describe('CircuitBreaker', () => {
  const THRESHOLD = 3;
  const COOLDOWN_MS = 1000;
  let now: number;
  const breaker = () => new CircuitBreaker(THRESHOLD, COOLDOWN_MS, () => now);

  beforeEach(() => {
    now = 1_735_660_800_000;
  });

  it('counts a failed batch once per decision it carried: one onFailure(16) opens it', () => {
    const batched = breaker();
    batched.onFailure(16);
    expect(batched.isClosed).toBe(false);
    expect(batched.tryAcquire()).toBe(false);
  });

  it('stays closed below the threshold: onFailure(1) twice, then opens on the third', () => {
    const single = breaker();
    single.onFailure(1);
    single.onFailure(1);
    expect(single.isClosed).toBe(true);
    expect(single.tryAcquire()).toBe(true);
    single.onFailure(1);
    expect(single.isClosed).toBe(false);
    expect(single.tryAcquire()).toBe(false);
  });

  it('after a batch opened it, lets one probe through once the cool-down has passed', () => {
    const batched = breaker();
    batched.onFailure(16);
    now += COOLDOWN_MS - 1;
    expect(batched.tryAcquire()).toBe(false);
    now += 1;
    expect(batched.tryAcquire()).toBe(true);
    expect(batched.tryAcquire()).toBe(false);
    batched.onSuccess();
    expect(batched.isClosed).toBe(true);
  });
});
