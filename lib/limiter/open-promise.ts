/** Who holds the settling functions of a promise made by {@link openPromise}. */
export interface PromiseHolder<T> {
  resolvePromise: (value: T) => void;
  rejectPromise: (error: unknown) => void;
}

/** A new promise whose settling functions are written onto `holder`: one executor for all, no closure each. */
export function openPromise<T>(holder: PromiseHolder<T>): Promise<T> {
  const promise = new Promise<T>(capture);
  holder.resolvePromise = captured.resolve;
  holder.rejectPromise = captured.reject;
  return promise;
}

const captured = { resolve: unset as (value: unknown) => void, reject: unset as (error: unknown) => void };

function capture(resolve: (value: never) => void, reject: (error: unknown) => void): void {
  captured.resolve = resolve as (value: unknown) => void;
  captured.reject = reject;
}

/** What a holder's functions are until the promise's executor, which runs at once, sets them. */
export function unset(): void {}
