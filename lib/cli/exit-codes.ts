/**
 * Exit codes of the CLI, stable so that deploy scripts can branch on them.
 */
export const ExitCode = {
  /** Done; every node is in the requested state. */
  Ok: 0,
  /** Refused or failed: a check found a problem (list), a live instance calls the version (delete), a node refused the command. */
  Failed: 1,
  /** Bad command line: unknown command or flag, missing or invalid argument. Nothing was done. */
  Usage: 2,
  /** Redis could not be reached, authentication failed or a command timed out. */
  Connection: 3,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * What `doctor` exits with when it ran: the worst severity among its findings. The numbers are the
 * CLI's: 1 is the other commands' Failed, 2 their Usage — a doctor usage error exits 2 as well, but
 * prints nothing on stdout (and its `--json` document has `error.kind` `usage` and no findings).
 * A connection failure keeps exit code 3.
 */
export const DoctorExitCode = {
  /** Every finding is ok. */
  Healthy: ExitCode.Ok,
  /** At least one warning, no problem. */
  Warnings: ExitCode.Failed,
  /** At least one problem. */
  Problems: ExitCode.Usage,
} as const;

/** What kind of failure an exit code stands for, in `--json` output. */
export const EXIT_CODE_NAMES: Record<ExitCode, string> = {
  0: 'ok',
  1: 'failed',
  2: 'usage',
  3: 'connection',
};

/** A failure the CLI reports with its message and exit code (never a stack trace). */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CliError';
  }
}

/** A usage error (exit code 2): a bad command line, found before anything is done. */
export function usage(message: string): CliError {
  return new CliError(ExitCode.Usage, message);
}
