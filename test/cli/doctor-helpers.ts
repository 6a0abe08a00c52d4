import type Redis from 'ioredis';
import type { Finding } from '../../lib/cli/doctor/findings';
import { runCli } from './run-cli';

/** A finding of the doctor's --json document: the Finding the checks build, as JSON keeps it. */
export type JsonFinding = Finding;

/** The doctor's --json document. */
export interface DoctorDocument {
  ok: boolean;
  command: string;
  exitCode: number;
  servers: { node: string; name: string; version: string }[];
  keyPrefix: string;
  sample: number;
  nodes: { node: string; role: string; master: string | null }[];
  called: { functionName: string; version: string | null; stable: number; canary: number }[];
  summary: Record<string, number>;
  findings: JsonFinding[];
}

/** Runs `doctor … --json` and returns its exit code and document. */
export async function doctorJson(args: readonly string[]): Promise<{ code: number; doc: DoctorDocument }> {
  const run = await runCli(['doctor', ...args, '--json']);
  if (run.stderr !== '') throw new Error(`doctor wrote to stderr: ${run.stderr}`);
  return { code: run.code, doc: run.json<DoctorDocument>() };
}

/** The findings that are not ok, as `severity code node` lines: what a failing assertion shows. */
export function notOk(doc: DoctorDocument): string[] {
  return doc.findings.filter((f) => f.severity !== 'ok').map((f) => `${f.severity} ${f.code} ${f.node ?? '-'}`);
}

/** The findings with one code. */
export function findingsOf(doc: DoctorDocument, code: string): JsonFinding[] {
  return doc.findings.filter((f) => f.code === code);
}

/**
 * Puts a server the suite started back into its start state: no data, no functions, default
 * memory settings, the slow log off and empty, no latency history. Never for a shared server.
 */
export async function resetOwnServer(client: Redis): Promise<void> {
  await client.flushall();
  await client.function('FLUSH');
  await client.config('SET', 'maxmemory', '0');
  await client.config('SET', 'maxmemory-policy', 'noeviction');
  // Off: on a busy host a limiter call can pass the default 10 ms, and a test that does not look
  // for it would see a warning.
  await client.config('SET', 'slowlog-log-slower-than', '-1');
  await client.config('SET', 'latency-monitor-threshold', '0');
  await client.call('SLOWLOG', 'RESET');
  await client.call('LATENCY', 'RESET');
}
