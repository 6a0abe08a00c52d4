import type { Redis } from 'ioredis';
import { FunctionCodeMismatchError } from '../core/errors/function-code-mismatch.error';
import { FunctionNameTakenError } from '../core/errors/function-name-taken.error';
import { FunctionNotLoadedError } from '../core/errors/function-not-loaded.error';
import type { LoadFunctionsPolicy } from '../core/lua-runner';
import type { RedisConnection } from '../core/redis-connection';
import type { FunctionContract } from '../core/function-contract';
import { cliTargetFlags, redisCliTargets } from './cli-target';
import { functionsUnavailableOn } from './function-support';
import { readLibrarySource } from './lua-library';
import { librariesOf } from './loaded-libraries';
import { isFunctionNameTaken, isLibraryAlreadyExists } from './reply';
import { masterNodes, nodeAddress } from './redis-nodes';

type LibraryState = 'loaded' | 'missing' | 'different';

/** The shell commands that load a bundled library by hand on `connection`'s servers, for messages. */
export function loadCommandFor(contract: FunctionContract, connection: RedisConnection): string {
  const file = `node_modules/nestjs-sliding-limit/dist/redis/lua/${contract.sourceFile}`;
  const redisCli = redisCliTargets(connection).map((cli) => `${cli} -x FUNCTION LOAD < ${file}`);
  return (
    `npx nestjs-sliding-limit functions load ${contract.version} ${cliTargetFlags(connection)} ` +
    `(or ${redisCli.join('; ')})`
  );
}

/** Makes sure a library version is on every master, per `loadFunctions`; never FUNCTION LOAD REPLACE. */
export class FunctionLoader {
  private readonly source: string;

  constructor(
    private readonly connection: RedisConnection,
    private readonly contract: FunctionContract,
  ) {
    this.source = readLibrarySource(contract.sourceFile);
  }

  /** Checks every master per policy (`auto` loads, `verify` fails, `off` trusts); returns where it loaded. */
  async prepare(policy: LoadFunctionsPolicy): Promise<string[]> {
    if (policy === 'off') return [];
    const nodes = await masterNodes(this.connection);
    const states = await Promise.all(
      nodes.map((node) => this.inspect(node).catch((error: unknown) => rethrowExplained(node, error))),
    );
    const having = (state: LibraryState) => nodes.filter((_, i) => states[i] === state);

    const different = having('different');
    if (different.length > 0) throw this.mismatch(different);

    const missing = having('missing');
    if (missing.length === 0) return [];
    if (policy === 'verify') {
      // Listing works without a Lua engine; loading would not: say so rather than "load it".
      for (const node of missing) {
        const unavailable = await functionsUnavailableOn(node);
        if (unavailable) throw unavailable;
      }
      throw new FunctionNotLoadedError(
        this.contract.allowFunction,
        this.contract.libraryName,
        missing.map(nodeAddress),
        loadCommandFor(this.contract, this.connection),
      );
    }
    await Promise.all(missing.map((node) => this.load(node)));
    return missing.map(nodeAddress);
  }

  private mismatch(nodes: readonly Redis[]): FunctionCodeMismatchError {
    return new FunctionCodeMismatchError(
      this.contract.libraryName,
      nodes.map(nodeAddress),
      cliTargetFlags(this.connection),
    );
  }

  private async inspect(node: Redis): Promise<LibraryState> {
    const [library] = await librariesOf(node, this.contract.libraryName);
    if (!library) return 'missing';
    return library.code === this.source ? 'loaded' : 'different';
  }

  private async load(node: Redis): Promise<void> {
    try {
      await node.call('FUNCTION', 'LOAD', this.source);
    } catch (error) {
      if (isFunctionNameTaken(error))
        throw new FunctionNameTakenError(this.contract.libraryName, nodeAddress(node), (error as Error).message);
      // Another instance loaded it between our LIST and LOAD; check it is the same code.
      if (!isLibraryAlreadyExists(error)) return rethrowExplained(node, error);
      if ((await this.inspect(node)) !== 'loaded') {
        throw this.mismatch([node]);
      }
    }
  }
}

/** `error`, or the FunctionsUnavailableError it reveals: a node that cannot run functions at all. */
async function rethrowExplained(node: Redis, error: unknown): Promise<never> {
  throw (await functionsUnavailableOn(node, error)) ?? error;
}
