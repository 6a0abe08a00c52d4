import { describeServer } from '../../core/server-identity';
import { nodeAddress } from '../../redis/redis-nodes';
import type { LoadedLibrary } from '../../redis/reply';
import type { Command } from '../command';
import { ExitCode } from '../exit-codes';
import { formatTable, plural } from '../format';
import { librariesOf } from '../../redis/loaded-libraries';
import { bundledContractOf, bundledSource } from '../libraries';

/** A difference `list` flags. */
export interface ListProblem {
  kind: 'missing' | 'differs-from-bundled' | 'differs-between-nodes';
  node: string;
  library: string;
  message: string;
}

/**
 * `functions list`: the libraries and functions of every master. Flags a master that lacks a
 * library another master has, a shipped library whose code is not the bundled code, and another
 * library whose code differs between masters. Exit code 1 when anything is flagged, so a deploy
 * script can use it as a check.
 */
export const listCommand: Command = async ({ masters, servers, suggest }) => {
  const nodes = await Promise.all(
    masters.map(async (node) => ({
      node: nodeAddress(node),
      server: servers.get(node),
      libraries: await librariesOf(node),
    })),
  );
  const problems: ListProblem[] = [];

  const names = [...new Set(nodes.flatMap((n) => n.libraries.map((library) => library.name)))].sort();
  for (const name of names) {
    const contract = bundledContractOf(name);
    const holders = nodes.filter((n) => n.libraries.some((library) => library.name === name));
    for (const lacking of nodes.filter((n) => !holders.includes(n))) {
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
        if (libraryOf(holder.libraries, name).code === source) continue;
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
      const codes = new Set(holders.map((holder) => libraryOf(holder.libraries, name).code));
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
    problems.length === 0
      ? `\nOK: ${plural(nodes.length, 'master')} checked; no master lacks a library, shipped libraries hold the bundled code.\n`
      : `\n${plural(problems.length, 'problem')}:\n${problems.map((p) => `  - ${p.message}\n`).join('')}`;

  return {
    exitCode: problems.length === 0 ? ExitCode.Ok : ExitCode.Failed,
    json,
    text,
    error: problems.length === 0 ? undefined : `${plural(problems.length, 'problem')} found; see above`,
  };
};

function libraryOf(libraries: readonly LoadedLibrary[], name: string): LoadedLibrary {
  return libraries.find((library) => library.name === name) as LoadedLibrary;
}
