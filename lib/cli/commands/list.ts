import { describeServer } from '../../core/server-identity';
import { nodeAddress } from '../../redis/redis-nodes';
import type { LoadedLibrary } from '../../redis/reply';
import { calledFunctions, describeCallers, type CalledFunction } from '../called-functions';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { formatTable, listSome, plural } from '../format';
import { readInstanceReports } from '../instance-reports';
import { librariesOf } from '../../redis/loaded-libraries';
import { bundledContractOf, bundledSource, libraryOf } from '../libraries';

interface ListProblem {
  kind: 'missing' | 'called-missing' | 'differs-from-bundled' | 'differs-between-nodes';
  node: string;
  /** The library; null for a called function this package does not ship (its library is unknown). */
  library: string | null;
  /** called-missing: the instances calling it. */
  instances?: string[];
  message: string;
}

interface ListedNode {
  node: string;
  libraries: LoadedLibrary[];
}

/**
 * `functions list`: the libraries of every master, flagging (exit code 1) a library live instances call
 * that a master lacks, a master lacking a library another has, and code that differs from the bundled
 * code or between masters.
 */
export const listCommand: Command = async ({ masters, servers, suggest }) => {
  const [nodes, { reports }] = await Promise.all([
    Promise.all(
      masters.map(async (node) => ({
        node: nodeAddress(node),
        server: servers.get(node),
        libraries: await librariesOf(node),
      })),
    ),
    readInstanceReports(masters, undefined),
  ]);
  const called = calledFunctions(reports);
  const problems: ListProblem[] = calledButMissing(nodes, called, suggest);
  const reported = new Set(problems.map((p) => `${p.node} ${p.library}`));

  const names = [...new Set(nodes.flatMap((n) => n.libraries.map((library) => library.name)))].sort();
  for (const name of names) {
    const contract = bundledContractOf(name);
    const holders = nodes.filter((n) => n.libraries.some((library) => library.name === name));
    for (const lacking of nodes.filter((n) => !holders.includes(n))) {
      if (reported.has(`${lacking.node} ${name}`)) continue;
      const fix = contract
        ? `run: ${suggest(`functions load ${contract.version}`)}`
        : `load it there (FUNCTION LOAD on ${lacking.node}), or delete it from the others`;
      problems.push({
        kind: 'missing',
        node: lacking.node,
        library: name,
        message: `${lacking.node} lacks ${name}, loaded on ${holders.map((h) => h.node).join(', ')}; ${fix}`,
      });
    }
    if (contract) {
      const source = bundledSource(contract);
      for (const holder of holders) {
        if (libraryOf(holder.libraries, name)?.code === source) continue;
        problems.push({
          kind: 'differs-from-bundled',
          node: holder.node,
          library: name,
          message:
            `${name} on ${holder.node} is not the bundled ${contract.version} (loaded by another package version, or edited); ` +
            `if the bundled code is the one to run: ${suggest(`functions load ${contract.version} --replace`)}`,
        });
      }
    } else {
      const codes = new Set(holders.map((holder) => libraryOf(holder.libraries, name)?.code));
      if (codes.size > 1) {
        for (const holder of holders) {
          problems.push({
            kind: 'differs-between-nodes',
            node: holder.node,
            library: name,
            message: `${name} has different code on ${holders.map((h) => h.node).join(', ')}; load the same code on every master`,
          });
        }
      }
    }
  }

  const json = {
    nodes: nodes.map(({ node, libraries }) => ({
      node,
      libraries: libraries.map((library) => {
        const contract = bundledContractOf(library.name);
        return {
          library: library.name,
          version: contract?.version ?? null,
          functions: [...library.functions].sort(),
          matchesBundled: contract ? library.code === bundledSource(contract) : null,
        };
      }),
    })),
    called,
    problems,
  };

  let text = '';
  for (const [i, { node, libraries }] of json.nodes.entries()) {
    const server = nodes[i].server;
    text += server ? `${node} (${describeServer(server)})\n` : `${node}\n`;
    text +=
      libraries.length === 0
        ? '  (no libraries)\n'
        : formatTable(
            libraries.map((l) => [
              l.library,
              l.version ?? '-',
              l.functions.join(', '),
              l.matchesBundled === false ? '(not the bundled code)' : '',
            ]),
          );
  }
  text +=
    called.length === 0
      ? '\nNo live instance reports: which functions are called is unknown (instances report unless report: false).\n'
      : `\nCalled by live instances: ${called.map(describeCalled).join(', ')}\n`;
  text +=
    problems.length === 0
      ? `\nOK: ${plural(nodes.length, 'master')} checked; every function live instances call is loaded, ` +
        'no master lacks a library, shipped libraries hold the bundled code.\n'
      : `\n${plural(problems.length, 'problem')}:\n${problems.map((p) => `  - ${p.message}\n`).join('')}`;

  return {
    exitCode: problems.length === 0 ? ExitCode.Ok : ExitCode.Failed,
    json,
    text,
    error: problems.length === 0 ? undefined : `${plural(problems.length, 'problem')} found; see above`,
  };
};

/** A problem for each master lacking a function live instances call (its shipped library, or any that registers it). */
function calledButMissing(
  nodes: readonly ListedNode[],
  called: readonly CalledFunction[],
  suggest: (command: string) => string,
): ListProblem[] {
  const problems: ListProblem[] = [];
  for (const { functionName, version, library, callers } of called) {
    const instances = callers.map((caller) => caller.instanceId);
    const who = `live instances call ${functionName}: ${describeCallers(callers)}`;
    for (const { node, libraries } of nodes) {
      const has = (loaded: LoadedLibrary) =>
        library !== null ? loaded.name === library : loaded.functions.includes(functionName);
      if (libraries.some(has)) continue;
      problems.push({
        kind: 'called-missing',
        node,
        library,
        instances,
        message:
          library !== null
            ? `${library} (${version}) is not loaded on ${node}, and ${who}; run: ${suggest(`functions load ${version}`)}`
            : `no library on ${node} registers ${functionName}, and ${who}; this package version does not ship it: ` +
              'load it with the CLI of the package version those instances run',
      });
    }
  }
  return problems;
}

/** `sliding_allow_v2 (v2: web-1, web-2 canary)`. */
function describeCalled({ functionName, version, callers }: CalledFunction): string {
  const ids = callers.map((caller) => `${caller.instanceId}${caller.canary ? ' canary' : ''}`);
  return `${functionName} (${version ?? 'not shipped'}: ${listSome(ids)})`;
}
