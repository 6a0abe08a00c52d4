/** Exit codes of the CLI, stable so that deploy scripts can branch on them. */
export const ExitCode = {
  Ok: 0,
  /** Refused or failed: a problem found (list), a version in use (delete), a node refused the command. */
  Failed: 1,
  /** Bad command line: nothing was done. */
  Usage: 2,
  /** Redis could not be reached, authentication failed or a command timed out. */
  Connection: 3,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** What `doctor` exits with when it ran: its worst finding's severity (a usage error is 2 too, with no findings). */
export const DoctorExitCode = {
  Healthy: ExitCode.Ok,
  Warnings: ExitCode.Failed,
  Problems: ExitCode.Usage,
} as const;

/** What kind of failure an exit code stands for, in `--json` output: `ok`, `failed`, `usage`, `connection`. */
export const EXIT_CODE_NAMES = Object.fromEntries(
  Object.entries(ExitCode).map(([name, code]) => [code, name.toLowerCase()]),
) as Record<ExitCode, string>;

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
