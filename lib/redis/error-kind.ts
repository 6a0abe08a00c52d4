import { ClockSkewError } from '../core/errors/clock-skew.error';
import { FunctionNotLoadedError } from '../core/errors/function-not-loaded.error';
import { FunctionsUnavailableError } from '../core/errors/functions-unavailable.error';
import { RedisUnavailableError } from '../core/errors/redis-unavailable.error';
import type { LimiterErrorKind } from '../core/call-metrics';
import { messageOf } from './reply';

const CONNECTION_ERROR =
  /ECONNREFUSED|ECONNRESET|EPIPE|ENOTCONN|EHOSTUNREACH|Connection is closed|Stream isn't writeable|MaxRetriesPerRequest|enableOfflineQueue|ClusterAllFailedError|Failed to refresh slots cache|CLUSTERDOWN|TRYAGAIN|LOADING/i;
const TIMEOUT_ERROR = /timed? ?out|ETIMEDOUT/i;
const REDIS_ERROR_CODE = /^[A-Z][A-Z_]+ /;

/** Sorts a failed call into the kinds the metrics count and the failure policy acts on. */
export function errorKindOf(error: unknown): LimiterErrorKind {
  if (error instanceof RedisUnavailableError) return error.reason === 'timeout' ? 'timeout' : 'connection';
  if (error instanceof FunctionNotLoadedError || error instanceof FunctionsUnavailableError)
    return 'function_not_loaded';
  if (error instanceof ClockSkewError) return 'clock_skew';
  const message = messageOf(error);
  if (TIMEOUT_ERROR.test(message)) return 'timeout';
  if (CONNECTION_ERROR.test(message)) return 'connection';
  if (REDIS_ERROR_CODE.test(message)) return 'redis';
  return 'other';
}

/** True when a call failed because Redis went away or did not answer in time (not an error reply). */
export function isUnanswered(error: unknown): boolean {
  const kind = errorKindOf(error);
  return kind === 'connection' || kind === 'timeout';
}
