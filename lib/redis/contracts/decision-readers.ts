import { decisionFromOutcomes } from '../../core/caller-decisions';
import type { MultiRateLimitDecision } from '../../core/decisions';
import type { AllowCall, FunctionContract } from '../../core/function-contract';
import { readV2Decision, readV2Decisions } from './v2-replies';
import { V2_CONTRACT } from './v2.contract';

/** Reads a version's allow replies straight into its callers' decisions, what the contract's parsers say. */
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

/** v2: per limit room, count, remaining, retry_after_ms, reset_ms, limit and override. */
function v2Reader(contract: FunctionContract): DecisionReader {
  const functionName = contract.allowFunction;
  const allowCommand = `FCALL ${functionName}`;
  const batchCommand = `FCALL ${contract.batch?.name}`;
  return {
    allow: (reply, call) => readV2Decision(reply, call.rules, allowCommand, functionName),
    batch: (reply, calls) => readV2Decisions(reply, calls, batchCommand, functionName),
  };
}

const READERS = new Map<FunctionContract, DecisionReader>([[V2_CONTRACT, v2Reader(V2_CONTRACT)]]);

/** The reader of `contract`'s replies. */
export function decisionReaderOf(contract: FunctionContract): DecisionReader {
  return READERS.get(contract) ?? throughOutcomes(contract);
}
