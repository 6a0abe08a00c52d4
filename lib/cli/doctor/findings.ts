import { DoctorExitCode, type ExitCode } from '../exit-codes';

/** How bad a finding is: ok (nothing to do), warning (worth a look), problem (fix it). */
export type Severity = 'ok' | 'warning' | 'problem';

/** The checks, in the order the doctor runs and prints them. */
export const CHECKS = ['functions', 'memory', 'keys', 'slowness', 'cluster'] as const;
export type CheckName = (typeof CHECKS)[number];

export interface Finding {
  check: CheckName;
  severity: Severity;
  /** A stable identifier of the kind of finding, for scripts: `function-missing`, `key-without-ttl`. */
  code: string;
  /** The node it is about (`host:port`), or null for the whole deployment. */
  node: string | null;
  /** What was found, one line. */
  summary: string;
  /** What it means for the limiter, one line. */
  meaning: string;
  /** What to do, one line; null when there is nothing to do. */
  action: string | null;
  /** Figures behind the finding, for `--json`. */
  details?: Record<string, unknown>;
}

export type FindingInput = Omit<Finding, 'check'>;

/** The doctor's exit code, its worst finding's: 0 all ok, 1 warnings, 2 problems. */
export function doctorExitCode(findings: readonly Finding[]): ExitCode {
  if (findings.some((f) => f.severity === 'problem')) return DoctorExitCode.Problems;
  return findings.some((f) => f.severity === 'warning') ? DoctorExitCode.Warnings : DoctorExitCode.Healthy;
}

export function countBySeverity(findings: readonly Finding[]): Record<Severity, number> {
  const counts: Record<Severity, number> = { ok: 0, warning: 0, problem: 0 };
  for (const finding of findings) counts[finding.severity]++;
  return counts;
}

export function ofCheck(check: CheckName, findings: readonly FindingInput[]): Finding[] {
  // One key order for every finding, whichever order a check built it in.
  return findings.map(({ severity, code, node, summary, meaning, action, details }) => ({
    check,
    severity,
    code,
    node,
    summary,
    meaning,
    action,
    ...(details === undefined ? {} : { details }),
  }));
}

/** `2,048 B`, `1.5 KB`, `10.4 MB`: sizes in messages. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 * 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${(bytes / 1024 / 1024 / 1024).toFixed(2)} GB`;
}
