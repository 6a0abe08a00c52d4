import type { LibraryReload } from '../core/limiter-backend';
import { messageOf } from '../redis/reply';
import type { LimiterLogger } from './degraded-mode-log';
import type { FunctionRouting } from './function-routing';

/** Start-up failed (or was waited for in vain) for the first time; decisions now follow onRedisError. */
export function logStartupFailed(logger: LimiterLogger, cause: unknown, retryMs: number): void {
  logger.warn(
    `Start-up did not finish (${messageOf(cause)}); decisions follow onRedisError until it does. ` +
      `Retrying in the background every ${retryMs / 1000} s and whenever the connection is ready`,
  );
}

/** Start-up succeeded after failing. */
export function logStarted(logger: LimiterLogger, afterMs: number, attempts: number, routing: FunctionRouting): void {
  logger.log(
    `Start-up finished after ${(afterMs / 1000).toFixed(1)} s and ${attempts} attempts; ` +
      `${routing.stable.contract.allowFunction} decides`,
  );
}

/** A server had lost a library and a call loaded it again: news under `verify`, where the operator loads them. */
export function logReload(logger: LimiterLogger, { libraryName, functionName, nodes, policy }: LibraryReload): void {
  const where = nodes.join(', ');
  if (policy !== 'verify') {
    logger.log(
      `${where} had lost library ${libraryName} (a restart without persistence, or FUNCTION FLUSH); ` +
        `reloaded it (loadFunctions 'auto'), and ${functionName} decides again`,
    );
    return;
  }
  logger.warn(
    `loadFunctions is 'verify', but ${where} had lost library ${libraryName} (a restart without persistence, ` +
      `or FUNCTION FLUSH): reloaded the bundled ${libraryName}, the library verified at start-up, so that ` +
      `${functionName} decides again. Make the server keep its functions (appendonly or RDB persistence, ` +
      `or load them as it starts) and find out why it lost them`,
  );
}
