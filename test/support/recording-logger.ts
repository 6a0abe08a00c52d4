/** A limiter logger that keeps its lines by level, for the tests that check what was logged. */
export function recordingLogger() {
  const lines = { logs: [] as string[], warnings: [] as string[], errors: [] as string[] };
  return {
    ...lines,
    log: (message: string) => lines.logs.push(message),
    warn: (message: string) => lines.warnings.push(message),
    error: (message: string) => lines.errors.push(message),
  };
}
