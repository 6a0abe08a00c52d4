import { plural } from '../format';
import { CHECKS, type CheckName, countBySeverity, type Finding, type Severity } from './findings';

const LABEL: Record<Severity, string> = { ok: 'ok', warning: 'WARNING', problem: 'PROBLEM' };

const TITLES: Record<CheckName, string> = {
  functions: 'Functions (the libraries live instances call, on every node)',
  memory: 'Memory (maxmemory and eviction policy of every master)',
  keys: 'Keys (a SCAN sample of the limiter keys on every master)',
  slowness: 'Slowness (SLOWLOG, LATENCY LATEST, busy-reply-threshold)',
  cluster: 'Cluster and replication',
};

/** The text report: a section per check, findings by node (the whole deployment first), then the totals. */
export function renderFindings(header: string, findings: readonly Finding[], exitCode: number): string {
  let text = `${header}\n`;
  for (const check of CHECKS) {
    const ofCheck = findings.filter((f) => f.check === check);
    if (ofCheck.length === 0) continue;
    text += `\n${TITLES[check]}\n`;
    const nodes = [...new Set(ofCheck.map((f) => f.node))].sort((a, b) =>
      a === null ? -1 : b === null ? 1 : a.localeCompare(b, undefined, { numeric: true }),
    );
    for (const node of nodes) {
      text += `  ${node ?? 'all nodes'}\n`;
      for (const finding of ofCheck.filter((f) => f.node === node)) {
        text += `    ${LABEL[finding.severity].padEnd(8)} ${finding.summary}\n`;
        if (finding.severity !== 'ok' || finding.action) {
          text += `             means: ${finding.meaning}\n`;
          if (finding.action) text += `             do: ${finding.action}\n`;
        }
      }
    }
  }
  const counts = countBySeverity(findings);
  const verdict = counts.problem > 0 ? 'problems found' : counts.warning > 0 ? 'warnings only' : 'all good';
  text +=
    `\n${verdict}: ${plural(counts.problem, 'problem')}, ${plural(counts.warning, 'warning')}, ` +
    `${counts.ok} ok (exit ${exitCode})\n`;
  return text;
}
