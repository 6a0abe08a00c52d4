import { SlidingLimitError } from './sliding-limit.error';

/**
 * A library with the bundled version's name is loaded with different code. It is never replaced
 * silently: a version name must always mean one contract.
 */
export class FunctionCodeMismatchError extends SlidingLimitError {
  constructor(
    readonly libraryName: string,
    readonly nodes: readonly string[],
  ) {
    super(
      `library ${libraryName} on ${nodes.join(', ')} differs from the one bundled with nestjs-sliding-limit; ` +
        `inspect it with FUNCTION LIST LIBRARYNAME ${libraryName} WITHCODE (or npx nestjs-sliding-limit functions list), ` +
        `then either ship the change as a new version or replace it deliberately: ` +
        `npx nestjs-sliding-limit functions load ${libraryName} --replace`,
    );
  }
}
