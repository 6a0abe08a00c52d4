import { decisionFromOutcomes } from '../../core/caller-decisions';
import type { MultiRateLimitDecision } from '../../core/decisions';
import type { AllowCall, FunctionContract } from '../../core/function-contract';
import { readDecision, readDecisions } from './limit-replies';
import { V2_CONTRACT } from './v2.contract';
import { V3_CONTRACT } from './v3.contract';
import { readV4Decision, readV4Decisions } from './v4-replies';
import { V4_CONTRACT } from './v4.contract';

/**
 * Reads a version's allow replies straight into the decisions the limiter's callers get: the
 * decision path's one parse, with no outcome objects in between. What it reads is what the
 * contract's `parseAllowReply` / `batch.parseReply` say (their outcomes are the public form, for
 * tools and tests), as the caller's `RateLimitDecision`s.
 */
export interface DecisionReader {
  /** The reply of the allow function to `call`. */
  allow(reply: unknown, call: AllowCall): MultiRateLimitDecision;
  /** The reply of the batch function to `calls`, one decision per call, in order. */
  batch(reply: unknown, calls: readonly AllowCall[]): MultiRateLimitDecision[];
}

/** The reader of the versions whose replies have no reader of their own (v1): through the outcomes. */
function throughOutcomes(contract: FunctionContract): DecisionReader {
  const functionName = contract.allowFunction;
  return {
    allow(reply, call) {
      const { allowed, limits } = contract.parseAllowReply(reply, call.rules, call.cost);
      return decisionFromOutcomes(allowed, limits, call.rules, functionName);
    },
    batch() {
      // Never called: calls are batched only for a version with a batch function, and v1 has none.
      throw new Error(`${functionName} has no batch function`);
    },
  };
}

/** v2 and v3: `{allowed, count, remaining, retry_after_ms, reset_ms, ..}` per decision. */
function countsReader(contract: FunctionContract): DecisionReader {
  const functionName = contract.allowFunction;
  const allowCommand = `FCALL ${functionName}`;
  const batchCommand = `FCALL ${contract.batch?.name}`;
  return {
    allow: (reply, call) => readDecision(reply, call.rules, call.cost ?? 1, allowCommand, functionName),
    batch: (reply, calls) => readDecisions(reply, calls, batchCommand, functionName),
  };
}

/** v4: per limit room, count, remaining, retry_after_ms, reset_ms, limit and override. */
function v4Reader(contract: FunctionContract): DecisionReader {
  const functionName = contract.allowFunction;
  const allowCommand = `FCALL ${functionName}`;
  const batchCommand = `FCALL ${contract.batch?.name}`;
  return {
    allow: (reply, call) => readV4Decision(reply, call.rules, allowCommand, functionName),
    batch: (reply, calls) => readV4Decisions(reply, calls, batchCommand, functionName),
  };
}

const READERS = new Map<FunctionContract, DecisionReader>([
  [V2_CONTRACT, countsReader(V2_CONTRACT)],
  [V3_CONTRACT, countsReader(V3_CONTRACT)],
  [V4_CONTRACT, v4Reader(V4_CONTRACT)],
]);

/** The reader of `contract`'s replies. */
export function decisionReaderOf(contract: FunctionContract): DecisionReader {
  return READERS.get(contract) ?? throughOutcomes(contract);
}
