import { CircuitBreaker } from '../../lib/limiter/circuit-breaker';

describe('CircuitBreaker', () => {
  const THRESHOLD = 3;
  const COOLDOWN_MS = 1000;
  let now: number;
  const breaker = () => new CircuitBreaker(THRESHOLD, COOLDOWN_MS, () => now);

  beforeEach(() => {
    now = 1_735_660_800_000;
  });

  // A failed batch counts once per decision it carried (onFailure(16) alone opens it); failures add
  // up across calls until they reach THRESHOLD (3).
  it.each([
    { failures: [16], open: true },
    { failures: [1, 1], open: false },
    { failures: [1, 1, 1], open: true },
    { failures: [2], open: false },
    { failures: [2, 1], open: true },
  ])('onFailure($failures) leaves it open: $open', ({ failures, open }) => {
    const subject = breaker();
    for (const count of failures) subject.onFailure(count);
    expect(subject.isClosed).toBe(!open);
    expect(subject.tryAcquire()).toBe(!open);
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

  it('reopens for a fresh cool-down when the probe fails', () => {
    const subject = breaker();
    subject.onFailure(THRESHOLD);
    now += COOLDOWN_MS;
    expect(subject.tryAcquire()).toBe(true); // the probe
    subject.onFailure();
    expect(subject.isClosed).toBe(false);
    // The cool-down restarts from the probe's failure, not from the first opening.
    now += COOLDOWN_MS - 1;
    expect(subject.tryAcquire()).toBe(false);
    now += 1;
    expect(subject.tryAcquire()).toBe(true);
    expect(subject.tryAcquire()).toBe(false);
  });

  it('reset() closes an open breaker at once, without waiting for the cool-down', () => {
    const subject = breaker();
    subject.onFailure(THRESHOLD);
    expect(subject.tryAcquire()).toBe(false);
    subject.reset();
    expect(subject.isClosed).toBe(true);
    expect(subject.tryAcquire()).toBe(true);
    expect(subject.tryAcquire()).toBe(true); // closed, not half-open: every caller gets through
  });

  it('onLateAnswer() ends the cool-down: one probe goes now, and only its answer closes the breaker', () => {
    const subject = breaker();
    subject.onFailure(THRESHOLD);
    subject.onLateAnswer(); // a frozen Redis resumed and answered a call that had timed out
    expect(subject.isClosed).toBe(false);
    expect(subject.tryAcquire()).toBe(true); // the probe, without waiting
    expect(subject.tryAcquire()).toBe(false);
    subject.onLateAnswer(); // more late answers do not let more calls past the probe
    expect(subject.tryAcquire()).toBe(false);
    subject.onFailure(); // still too slow: a full cool-down again
    now += COOLDOWN_MS - 1;
    expect(subject.tryAcquire()).toBe(false);
  });
});
