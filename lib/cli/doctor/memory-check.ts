import { messageOf } from '../../redis/reply';
import type { DoctorNode } from './doctor-nodes';
import { type FindingInput, formatBytes } from './findings';
import { integerOf, parseConfigGet, parseInfoFields } from './replies';

/** Shares of maxmemory in use from which a noeviction Redis (the configuration to have) is a warning, a problem. */
const NOEVICTION_WARNING_SHARE = 0.75;
const NOEVICTION_PROBLEM_SHARE = 0.9;

/** What an evicting policy family (`allkeys-*`, `volatile-*`) does to a limiter's keys. */
const EVICTION_MEANINGS: Readonly<Record<string, string>> = {
  allkeys:
    'when memory is full Redis evicts any key, limiter keys too: an evicted key forgets its requests and limits under-count',
  volatile: 'every limiter key has a TTL, so volatile eviction picks them too: an evicted key makes limits under-count',
};

interface MemorySettings {
  maxmemoryBytes: number;
  policy: string;
  usedBytes: number;
  /** Why CONFIG GET could not be used (managed Redis often refuses it); the figures come from INFO memory then. */
  configRefused?: string;
}

/** maxmemory and maxmemory-policy by CONFIG GET, else from INFO memory; used_memory from INFO memory. */
async function readMemorySettings(node: DoctorNode): Promise<MemorySettings> {
  const info = parseInfoFields(await node.client.info('memory'));
  const usedBytes = integerOf(info.get('used_memory')) ?? 0;
  try {
    const config = parseConfigGet(await node.client.call('CONFIG', 'GET', 'maxmemory*'));
    return {
      maxmemoryBytes: integerOf(config.maxmemory) ?? 0,
      policy: config['maxmemory-policy'] ?? 'unknown',
      usedBytes,
    };
  } catch (error) {
    return {
      maxmemoryBytes: integerOf(info.get('maxmemory')) ?? 0,
      policy: info.get('maxmemory_policy') ?? 'unknown',
      usedBytes,
      configRefused: messageOf(error).split('\n')[0],
    };
  }
}

/** Memory: maxmemory and the eviction policy of every master (replicas ignore maxmemory by default). */
export async function checkMemory(nodes: readonly DoctorNode[]): Promise<FindingInput[]> {
  const masters = nodes.filter((node) => node.role === 'master');
  const settings = await Promise.all(masters.map(readMemorySettings));
  return masters.map((node, i) => judgeMemory(node.address, settings[i]));
}

export function judgeMemory(address: string, settings: MemorySettings): FindingInput {
  const { maxmemoryBytes, policy, usedBytes, configRefused } = settings;
  const source = configRefused ? ` (from INFO memory: CONFIG GET was refused: ${configRefused})` : '';
  const share = maxmemoryBytes > 0 ? usedBytes / maxmemoryBytes : 0;
  const used = maxmemoryBytes > 0 ? `${formatBytes(usedBytes)} of ${formatBytes(maxmemoryBytes)} used` : '';
  const details = { ...settings, usedShare: maxmemoryBytes > 0 ? share : null };
  const base = { node: address, details };

  if (maxmemoryBytes === 0) {
    return {
      ...base,
      severity: 'ok',
      code: 'memory-unbounded',
      summary: `no maxmemory (policy ${policy} does not apply); ${formatBytes(usedBytes)} used${source}`,
      meaning: 'nothing is evicted and no write fails with OOM; Redis grows until the host runs out of memory',
      action: null,
    };
  }
  if (policy === 'noeviction') return judgeNoeviction(base, share, used, source);
  const family = policy.split('-')[0];
  if (Object.hasOwn(EVICTION_MEANINGS, family)) {
    return {
      ...base,
      severity: 'warning',
      code: 'memory-evicts-limiter-keys',
      summary: `maxmemory-policy ${policy}: ${used}${source}`,
      meaning: EVICTION_MEANINGS[family],
      action: 'give the limiter a Redis of its own with noeviction and room for its keys, or keep memory from filling',
    };
  }
  return {
    ...base,
    severity: 'warning',
    code: 'memory-policy-unknown',
    summary: `maxmemory-policy ${policy}: ${used}${source}`,
    meaning: 'a policy the doctor does not know: check what it evicts',
    action: 'read the server documentation of this policy',
  };
}

/** noeviction with maxmemory keeps counts exact until memory is full: ok with room, else a warning or a problem. */
function judgeNoeviction(
  base: Pick<FindingInput, 'node' | 'details'>,
  share: number,
  used: string,
  source: string,
): FindingInput {
  const finding = { ...base, code: 'memory-noeviction' };
  const percent = `${(share * 100).toFixed(1)}%`;
  const oom = 'the failure policy decides every limiter call (fail open or closed)';
  if (share >= 1) {
    return {
      ...finding,
      severity: 'problem',
      summary: `maxmemory-policy noeviction, over maxmemory (${percent}): ${used}${source}`,
      meaning: `Redis refuses writes with OOM: ${oom} until memory is freed`,
      action:
        'over maxmemory: every limiter write fails with OOM now; raise maxmemory, or find what fills it (see the keys check)',
    };
  }
  if (share >= NOEVICTION_WARNING_SHARE) {
    const problem = share >= NOEVICTION_PROBLEM_SHARE;
    return {
      ...finding,
      severity: problem ? 'problem' : 'warning',
      summary: `maxmemory-policy noeviction, nearly full (${percent}): ${used}${source}`,
      meaning: `when memory is full Redis refuses writes with OOM and ${oom}`,
      action: `nearly full: raise maxmemory, or find what fills it (see the keys check)`,
    };
  }
  return {
    ...finding,
    severity: 'ok',
    summary: `maxmemory-policy noeviction: ${used} (${percent})${source}`,
    meaning: `nothing is evicted, so limits stay exact; writes fail with OOM only once memory is full (a warning from ${NOEVICTION_WARNING_SHARE * 100}% used): alert on used memory`,
    action: null,
  };
}
