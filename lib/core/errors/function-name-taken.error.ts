import { SlidingLimitError } from './sliding-limit.error';

/**
 * Another library registers a function with the name of one of ours, so ours cannot be loaded — and
 * calling that name would run someone else's code. Function names are global on a Redis server.
 */
export class FunctionNameTakenError extends SlidingLimitError {
  constructor(
    readonly libraryName: string,
    readonly node: string,
    redisMessage: string,
  ) {
    super(
      `cannot load library ${libraryName} on ${node}: ${redisMessage}. Another library registers that function name; ` +
        `find it with FUNCTION LIST, and delete or rename it before using this version`,
    );
  }
}
