import { DeadlineQueue } from '../../lib/limiter/deadline-queue';

describe('DeadlineQueue', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('times a call out between 1 and 1.25 timeouts after it started, unless it settled', () => {
    const queue = new DeadlineQueue(400);
    const fired: string[] = [];
    queue.track(() => fired.push('first'));
    const settled = queue.track(() => fired.push('settled'));
    queue.settle(settled);
    jest.advanceTimersByTime(399);
    expect(fired).toEqual([]);
    jest.advanceTimersByTime(101); // 500 ms: 1.25 timeouts
    expect(fired).toEqual(['first']);

    jest.advanceTimersByTime(50);
    queue.track(() => fired.push('late'));
    jest.advanceTimersByTime(399);
    expect(fired).toEqual(['first']);
    jest.advanceTimersByTime(101);
    expect(fired).toEqual(['first', 'late']);
  });

  it('keeps every pending call across growth of its ring, and stops its timer when idle', () => {
    const queue = new DeadlineQueue(100);
    const fired = new Set<number>();
    const seqs = Array.from({ length: 5000 }, (_, i) => queue.track(() => fired.add(i)));
    seqs.forEach((seq, i) => i % 2 === 0 && queue.settle(seq));
    jest.advanceTimersByTime(125);
    expect(fired.size).toBe(2500);
    expect([...fired].every((i) => i % 2 === 1)).toBe(true);
    jest.advanceTimersByTime(1000);
    expect(jest.getTimerCount()).toBe(0);
  });
});
