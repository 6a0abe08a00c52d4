/** Base class of every error this package throws; `instanceof SlidingLimitError` catches them all. */
export class SlidingLimitError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
