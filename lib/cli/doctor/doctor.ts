import { describeServer } from '../../core/server-identity';
import { isCluster } from '../../redis/redis-nodes';
import type { Command } from '../command';
import { plural } from '../format';
import { readInstanceReports } from '../instance-reports';
import { checkCluster } from './cluster-check';
import { findNodes } from './doctor-nodes';
import { doctorExitCode, type Finding, countBySeverity, ofCheck } from './findings';
import { checkFunctions } from './functions-check';
import { checkKeys } from './keys-sample';
import { checkMemory } from './memory-check';
import { renderFindings } from './render';
import { checkSlowness } from './slowness-check';

/** `doctor`: the after-launch checks on every node, reading only. Exit code 0 all ok, 1 warnings, 2 problems. */
export const doctorCommand: Command = async ({ options, connection, masters, servers, suggest }) => {
  const found = await findNodes(connection, masters);
  try {
    const { nodes } = found;
    const { reports } = await readInstanceReports(masters, undefined);
    const [functions, memory, keys, slowness, cluster] = await Promise.all([
      checkFunctions(nodes, reports, suggest),
      checkMemory(nodes),
      checkKeys(nodes, options.keyPrefix, options.sample),
      checkSlowness(nodes),
      checkCluster(connection, found),
    ]);
    const findings: Finding[] = [
      ...ofCheck('functions', functions.findings),
      ...ofCheck('memory', memory),
      ...ofCheck('keys', keys),
      ...ofCheck('slowness', slowness),
      ...ofCheck('cluster', cluster),
    ];
    const exitCode = doctorExitCode(findings);
    const replicas = nodes.filter((node) => node.role === 'replica').length;
    const [first] = masters;
    const server = servers.get(first);
    const header =
      `nestjs-sliding-limit doctor: ${isCluster(connection) ? 'cluster' : 'standalone'}, ` +
      `${plural(masters.length, 'master')}, ${plural(replicas, 'replica')}` +
      `${server ? ` (${describeServer(server)})` : ''}; key prefix ${options.keyPrefix}, sample ${options.sample}`;
    return {
      exitCode,
      json: {
        keyPrefix: options.keyPrefix,
        sample: options.sample,
        nodes: nodes.map((node) => ({ node: node.address, role: node.role, master: node.master ?? null })),
        called: functions.called,
        summary: countBySeverity(findings),
        findings,
      },
      text: renderFindings(header, findings, exitCode),
    };
  } finally {
    found.close();
  }
};
