import { RedisUnavailableError } from '../core/errors/redis-unavailable.error';

/** The error of a call Redis did not answer in time. */
export function timeoutError(ms: number): RedisUnavailableError {
  return new RedisUnavailableError(`Redis did not answer within ${ms} ms`, 'timeout');
}

/** Rejects with {@link timeoutError} when `promise` has not settled within `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timeoutError(ms)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
