import type { FunctionContract } from '../../core/function-contract';
import { FUNCTION_VERSIONS, functionNamesOf } from '../../redis/function-versions';
import { librariesOf } from '../../redis/loaded-libraries';

import { plural } from '../format';
import { calledFunctions, type CalledFunction } from '../called-functions';
import type { FoundReport } from '../instance-reports';
import { bundledContractOf, bundledSource, libraryOf } from '../libraries';
import type { DoctorNode } from './doctor-nodes';
import type { FindingInput } from './findings';

/** Functions: every node holds the libraries live instances call (or those loaded anywhere), as bundled. */
export async function checkFunctions(
  nodes: readonly DoctorNode[],
  reports: readonly FoundReport[],
  suggest: (command: string) => string,
): Promise<{ findings: FindingInput[]; called: CalledFunction[] }> {
  const findings: FindingInput[] = [];
  const called = calledFunctions(reports);
  const loaded = await Promise.all(nodes.map(async (node) => ({ node, libraries: await librariesOf(node.client) })));

  if (reports.length === 0) {
    findings.push({
      severity: 'ok',
      code: 'no-instance-reports',
      node: null,
      summary: 'no live instance reports: which versions are called is unknown',
      meaning:
        'limiters write a report only with their report option on; the doctor checks the shipped libraries it finds instead',
      action: null,
    });
  } else {
    findings.push({
      severity: 'ok',
      code: 'versions-called',
      node: null,
      summary: `${plural(reports.length, 'live instance')} ${reports.length === 1 ? 'calls' : 'call'} ${called.map(describeCalled).join(', ')}`,
      meaning: 'from the instance reports (functions status has the rates and latencies)',
      action: null,
      details: { called },
    });
  }

  // Function names the instances call that this package does not ship: found on every node?
  for (const unknown of called.filter((c) => c.library === null)) {
    const lacking = loaded.filter((l) => !l.libraries.some((lib) => lib.functions.includes(unknown.functionName)));
    findings.push({
      severity: lacking.length > 0 ? 'problem' : 'warning',
      code: lacking.length > 0 ? 'function-missing' : 'function-not-shipped',
      node: lacking.length > 0 ? lacking.map((l) => l.node.address).join(', ') : null,
      summary:
        `instances call ${unknown.functionName}, which this package version does not ship` +
        (lacking.length > 0 ? `; missing on ${lacking.map((l) => l.node.address).join(', ')}` : ''),
      meaning: 'an instance runs another version of the package; its calls fail where the function is missing',
      action: 'check it with the CLI of the package version those instances run',
    });
  }

  const calledLibraries = new Set(called.map((c) => c.library).filter((name): name is string => name !== null));
  for (const contract of FUNCTION_VERSIONS) {
    const holders = loaded.filter((l) => libraryOf(l.libraries, contract.libraryName));
    const isCalled = calledLibraries.has(contract.libraryName);
    const expected = isCalled || (reports.length === 0 && holders.length > 0);
    if (!expected && holders.length === 0) continue;
    const source = bundledSource(contract);
    const who = isCalled
      ? 'live instances call it'
      : reports.length === 0
        ? 'loaded on another node'
        : 'no instance calls it';
    let clean = true;

    for (const { node } of loaded.filter((l) => !holders.includes(l))) {
      clean = false;
      findings.push({
        severity: expected ? 'problem' : 'warning',
        code: 'library-missing',
        node: node.address,
        summary: `${contract.libraryName} (${contract.version}) is not loaded on ${node.address} (${node.role}); ${who}`,
        meaning: missingMeaning(contract, node, isCalled),
        action: `run: ${suggest(`functions load ${contract.version}`)}`,
        details: { library: contract.libraryName, version: contract.version, role: node.role },
      });
    }
    for (const { node, libraries } of holders) {
      if (libraryOf(libraries, contract.libraryName)?.code === source) continue;
      clean = false;
      findings.push({
        severity: expected ? 'problem' : 'warning',
        code: 'library-differs',
        node: node.address,
        summary: `${contract.libraryName} on ${node.address} (${node.role}) is not the bundled ${contract.version} code`,
        meaning:
          'loaded by another package version or edited: calls may answer differently from what this version expects',
        action: `if the bundled code is the one to run: ${suggest(`functions load ${contract.version} --replace`)}`,
        details: { library: contract.libraryName, version: contract.version, role: node.role },
      });
    }
    if (clean) {
      findings.push({
        severity: 'ok',
        code: 'library-ok',
        node: null,
        summary: `${contract.libraryName} (${contract.version}) is loaded with the bundled code on ${nodes.length === 1 ? 'the only node' : `all ${nodes.length} nodes`}`,
        meaning: isCalled ? 'the instances calling it find it on every slot and replica' : 'ready to be called',
        action: null,
      });
    }
  }
  if (called.length === 0 && !loaded.some((l) => l.libraries.some((lib) => bundledContractOf(lib.name)))) {
    findings.push({
      severity: 'ok',
      code: 'no-libraries',
      node: null,
      summary: 'no shipped library is loaded on any node',
      meaning: "a limiter loads its version when it starts (loadFunctions: 'auto', the default)",
      action: null,
    });
  }
  return { findings, called };
}

function missingMeaning(contract: FunctionContract, node: DoctorNode, isCalled: boolean): string {
  const names = functionNamesOf(contract).join(', ');
  if (node.role === 'replica')
    return `the replica lacks ${names}: reads sent to it, or a failover to it, answer "Function not found"`;
  return isCalled
    ? `every call of ${contract.allowFunction} for a key in this master's slots fails with "Function not found"`
    : `the masters disagree: a limiter switched to ${contract.version} would fail on this node`;
}

function describeCalled(called: CalledFunction): string {
  const version = called.version ?? 'not shipped';
  const counts = [called.stable ? `${called.stable} stable` : '', called.canary ? `${called.canary} canary` : '']
    .filter(Boolean)
    .join(', ');
  return `${called.functionName} (${version}: ${counts})`;
}
