import { FunctionNotLoadedError } from '../core/errors/function-not-loaded.error';
import type { LoadFunctionsPolicy } from '../core/lua-runner';
import type { RedisConnection } from '../core/redis-connection';
import type { FunctionContract } from '../core/function-contract';
import { functionNamesOf } from './function-versions';
import { LuaScript, readLibrarySource, toScript } from './lua-library';
import type { LuaRunner } from '../core/lua-runner';
import { masterNodes, nodeAddress } from './redis-nodes';
import { isNoScript, toInteger } from './reply';

/** Runs the Lua as scripts (EVALSHA, then EVAL on NOSCRIPT), never adding methods to the application's client. */
export class ScriptRunner implements LuaRunner {
  readonly mode = 'script';
  private readonly scripts = new Map<string, LuaScript>();

  constructor(
    private readonly connection: RedisConnection,
    private readonly contract: FunctionContract,
  ) {
    const source = readLibrarySource(contract.sourceFile);
    for (const name of functionNamesOf(contract)) this.scripts.set(name, toScript(source, name));
  }

  async prepare(policy: LoadFunctionsPolicy): Promise<void> {
    if (policy === 'off') return;
    const nodes = await masterNodes(this.connection);
    const scripts = [...this.scripts.values()];
    if (policy === 'auto') {
      await Promise.all(nodes.flatMap((node) => scripts.map((script) => node.script('LOAD', script.source))));
      return;
    }
    const missing: string[] = [];
    for (const node of nodes) {
      const exists = (await node.script('EXISTS', ...scripts.map((s) => s.sha1))) as unknown[];
      if (exists.some((flag) => toInteger(flag, 'SCRIPT EXISTS', exists) !== 1)) missing.push(nodeAddress(node));
    }
    if (missing.length > 0) {
      throw new FunctionNotLoadedError(
        this.contract.allowFunction,
        `${this.contract.libraryName} (as scripts)`,
        missing,
      );
    }
  }

  run(functionName: string, keyCount: number, keysAndArguments: readonly (string | number)[]): Promise<unknown> {
    return this.connection.evalsha(this.scriptOf(functionName).sha1, keyCount, ...keysAndArguments);
  }

  /** NOSCRIPT: the full text with EVAL, which also puts it back in that node's cache. */
  recover(
    error: unknown,
    functionName: string,
    keyCount: number,
    keysAndArguments: readonly (string | number)[],
  ): Promise<unknown> | undefined {
    if (!isNoScript(error)) return undefined;
    return this.connection.eval(this.scriptOf(functionName).source, keyCount, ...keysAndArguments);
  }

  private scriptOf(functionName: string): LuaScript {
    const script = this.scripts.get(functionName);
    if (!script) throw new Error(`${functionName} is not part of ${this.contract.libraryName}`);
    return script;
  }
}
