/** Where the CLI writes and what it reads from its environment; injected by tests. */
export interface CliIo {
  /** Receives the normal output (text or JSON), written as given. */
  stdout(text: string): void;
  /** Receives error messages and warnings. */
  stderr(text: string): void;
  /** Environment variables (REDIS_URL). */
  env: Record<string, string | undefined>;
}

/** The process's own streams and environment. */
export function processIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    env: process.env,
  };
}
