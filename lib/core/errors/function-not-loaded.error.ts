import { SlidingLimitError } from './sliding-limit.error';

/** The active function (or its script) is missing on one or more Redis nodes and was not loaded. */
export class FunctionNotLoadedError extends SlidingLimitError {
  constructor(
    readonly functionName: string,
    readonly libraryName: string,
    readonly nodes: readonly string[],
    /** The shell command that loads it; none for scripts, which only `loadFunctions: 'auto'` loads. */
    readonly loadCommand?: string,
  ) {
    super(
      `function ${functionName} (library ${libraryName}) is not loaded on ${nodes.join(', ')}; ` +
        (loadCommand ? `load it with: ${loadCommand} (or use loadFunctions: 'auto')` : `use loadFunctions: 'auto'`),
    );
  }
}
