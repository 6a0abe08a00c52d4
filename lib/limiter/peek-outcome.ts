import type { LimitOutcome } from '../core/function-contract';
import type { KeyCommands } from '../core/limiter-backend';
import type { SlidingLimitRule } from '../core/limit-rule';
import { runRecovering } from '../core/lua-runner';
import { toInteger } from '../redis/reply';
import { numericNow } from './clock';
import type { ActiveVersion } from './function-routing';

/** The state of `fullKey` under `rule`, recording nothing: by the read-only function, or a count (v1). */
export async function peekOutcome(
  version: ActiveVersion,
  commands: KeyCommands,
  fullKey: string,
  rule: SlidingLimitRule,
  cost: number,
  keyOverrides: boolean,
): Promise<LimitOutcome> {
  const { contract } = version;
  if (!contract.peekFunction || !contract.peekArguments || !contract.parsePeekReply) {
    return peekByCounting(commands, await numericNow(version.now, commands), fullKey, rule);
  }
  const nowMs = await version.now();
  const readOverrides = contract.full && keyOverrides;
  const keys = readOverrides && contract.peekKeys ? contract.peekKeys([fullKey], [rule]) : [fullKey];
  const args = contract.peekArguments(nowMs, [rule], cost, readOverrides ? [fullKey] : undefined);
  const reply = await runRecovering(version.runner, contract.peekFunction, keys, args, true);
  return contract.parsePeekReply(reply, [rule], cost).limits[0];
}

/** Peek without a read-only function (v1): a ZCOUNT of the window; it waits the window's length. */
async function peekByCounting(
  commands: KeyCommands,
  nowMs: number,
  key: string,
  rule: SlidingLimitRule,
): Promise<LimitOutcome> {
  const reply = await commands.zcount(key, `(${nowMs - rule.windowMs}`, '+inf');
  const count = toInteger(reply, 'ZCOUNT', reply);
  const allowed = count < rule.limit;
  return {
    allowed,
    count,
    remaining: Math.max(rule.limit - count, 0),
    retryAfterMs: allowed ? 0 : rule.windowMs,
    resetMs: count > 0 ? rule.windowMs : 0,
  };
}
