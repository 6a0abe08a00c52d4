import { SlidingLimitError } from './sliding-limit.error';

/** A library with the bundled version's name holds other code; never replaced silently. */
export class FunctionCodeMismatchError extends SlidingLimitError {
  /**
   * @param cliTargetFlags the CLI flags that reach those nodes (`--url redis://host:port` or
   *   `--cluster host:port,…`, never with a password), so that the commands the message names act on them
   */
  constructor(
    readonly libraryName: string,
    readonly nodes: readonly string[],
    cliTargetFlags: string,
  ) {
    super(
      `library ${libraryName} on ${nodes.join(', ')} differs from the one bundled with nestjs-sliding-limit; ` +
        `inspect it with FUNCTION LIST LIBRARYNAME ${libraryName} WITHCODE ` +
        `(or npx nestjs-sliding-limit functions list ${cliTargetFlags}), ` +
        `then either ship the change as a new version or replace it deliberately: ` +
        `npx nestjs-sliding-limit functions load ${libraryName} --replace ${cliTargetFlags}`,
    );
  }
}
