import { main } from '../../lib/cli/main';

/** What one in-process CLI run printed and returned. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as the --json document. */
  json<T = Record<string, unknown>>(): T;
}

/**
 * Runs the CLI in this process with captured output. REDIS_URL is empty unless given, so a run
 * never reaches a Redis the test did not name.
 */
export async function runCli(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env,
  });
  return {
    code,
    stdout,
    stderr,
    json: <T>() => JSON.parse(stdout) as T,
  };
}
