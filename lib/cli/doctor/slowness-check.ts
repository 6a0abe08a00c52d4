import { FUNCTION_VERSIONS, functionNamesOf } from '../../redis/function-versions';
import { toScript } from '../../redis/lua-library';
import { messageOf } from '../../redis/reply';
import { bundledSource } from '../libraries';
import type { DoctorNode } from './doctor-nodes';
import type { FindingInput } from './findings';
import {
  integerOf,
  type LatencyEvent,
  parseConfigGet,
  parseLatencyLatest,
  parseSlowlog,
  type SlowlogEntry,
} from './replies';

/** SLOWLOG entries read per node (what the log keeps by default). */
const SLOWLOG_ENTRIES = 128;
/** busy-reply-threshold's default, ms, assumed when CONFIG GET is refused. */
const DEFAULT_BUSY_THRESHOLD_MS = 5000;
/** A call slower than this is a warning (a normal one takes tens of µs), as is one at this share of the threshold. */
const SLOW_CALL_WARNING_US = 1000;
const BUSY_WARNING_SHARE = 0.1;
/** From this share of busy-reply-threshold, a call is a problem: BUSY errors are close. */
const BUSY_PROBLEM_SHARE = 0.5;

interface SlowCall {
  functionName: string;
  command: string;
  durationUs: number;
  timestamp: number;
  key: string | null;
}

let scriptShas: Map<string, string> | undefined;

/** The EVALSHA digests of the package's functions run as scripts (mode 'script'), to their names. */
function scriptShasOfFunctions(): Map<string, string> {
  scriptShas ??= new Map(
    FUNCTION_VERSIONS.flatMap((contract) =>
      functionNamesOf(contract).map((name) => [toScript(bundledSource(contract), name).sha1, name] as const),
    ),
  );
  return scriptShas;
}

const FUNCTION_NAMES = new Set(FUNCTION_VERSIONS.flatMap(functionNamesOf));

/** The entries that call one of the package's functions: FCALL, FCALL_RO, or EVALSHA of its scripts. */
function slowCallsOf(entries: readonly SlowlogEntry[]): SlowCall[] {
  const calls: SlowCall[] = [];
  for (const entry of entries) {
    const [command = '', target = '', numKeys = '0', firstKey] = entry.args;
    const upper = command.toUpperCase();
    let functionName: string | undefined;
    if (upper === 'FCALL' || upper === 'FCALL_RO') functionName = FUNCTION_NAMES.has(target) ? target : undefined;
    else if (upper === 'EVALSHA' || upper === 'EVALSHA_RO')
      functionName = scriptShasOfFunctions().get(target.toLowerCase());
    if (functionName === undefined) continue;
    calls.push({
      functionName,
      command: upper,
      durationUs: entry.durationUs,
      timestamp: entry.timestamp,
      key: Number(numKeys) > 0 && firstKey !== undefined ? firstKey : null,
    });
  }
  return calls;
}

export interface SlownessSettings {
  busyThresholdMs: number;
  /** Which setting it came from: busy-reply-threshold (Redis 7+), lua-time-limit, or the default. */
  busySetting: string;
  slowlogSlowerThanUs: number | null;
  latencyMonitorThresholdMs: number | null;
  configRefused?: string;
}

async function readSettings(node: DoctorNode): Promise<SlownessSettings> {
  const names = ['busy-reply-threshold', 'lua-time-limit', 'slowlog-log-slower-than', 'latency-monitor-threshold'];
  let config: Record<string, string> = {};
  let configRefused: string | undefined;
  try {
    config = parseConfigGet(await node.client.call('CONFIG', 'GET', ...names));
  } catch (error) {
    configRefused = messageOf(error).split('\n')[0];
  }
  const busy = integerOf(config['busy-reply-threshold']);
  const lua = integerOf(config['lua-time-limit']);
  return {
    busyThresholdMs: busy ?? lua ?? DEFAULT_BUSY_THRESHOLD_MS,
    busySetting: busy !== undefined ? 'busy-reply-threshold' : lua !== undefined ? 'lua-time-limit' : 'default',
    slowlogSlowerThanUs: integerOf(config['slowlog-log-slower-than']) ?? null,
    latencyMonitorThresholdMs: integerOf(config['latency-monitor-threshold']) ?? null,
    ...(configRefused === undefined ? {} : { configRefused }),
  };
}

/** Slowness: on every node, the package's calls in SLOWLOG, LATENCY LATEST and the BUSY threshold. */
export async function checkSlowness(nodes: readonly DoctorNode[]): Promise<FindingInput[]> {
  const perNode = await Promise.all(
    nodes.map(async (node) => {
      const [settings, slowlog, latency] = await Promise.all([
        readSettings(node),
        node.client.call('SLOWLOG', 'GET', SLOWLOG_ENTRIES).then(parseSlowlog),
        node.client.call('LATENCY', 'LATEST').then(parseLatencyLatest),
      ]);
      return judgeSlowness(node.address, settings, slowCallsOf(slowlog), latency);
    }),
  );
  return perNode.flat();
}

export function judgeSlowness(
  address: string,
  settings: SlownessSettings,
  calls: readonly SlowCall[],
  latency: readonly LatencyEvent[],
): FindingInput[] {
  const findings: FindingInput[] = [];
  const busyUs = settings.busyThresholdMs * 1000;
  const threshold = `${settings.busySetting === 'default' ? 'the default busy-reply-threshold' : settings.busySetting} ${settings.busyThresholdMs} ms`;
  const slower = settings.slowlogSlowerThanUs;
  const logged =
    slower === null ? '' : slower < 0 ? ' (the slow log is off)' : ` (it logs commands slower than ${slower} µs)`;

  if (calls.length === 0) {
    findings.push({
      severity: 'ok',
      code: 'slowlog-clean',
      node: address,
      summary: `no call of the package's functions among the last ${SLOWLOG_ENTRIES} SLOWLOG entries${logged}`,
      meaning: `no slow call seen: nothing near ${threshold}`,
      action: null,
    });
  } else {
    const longest = calls.reduce((a, b) => (b.durationUs > a.durationUs ? b : a));
    const byFunction = new Map<string, number>();
    for (const call of calls) byFunction.set(call.functionName, (byFunction.get(call.functionName) ?? 0) + 1);
    const share = longest.durationUs / busyUs;
    const severity =
      share >= BUSY_PROBLEM_SHARE
        ? 'problem'
        : share >= BUSY_WARNING_SHARE || longest.durationUs >= SLOW_CALL_WARNING_US
          ? 'warning'
          : 'ok';
    findings.push({
      severity,
      code: 'slowlog-function-calls',
      node: address,
      summary:
        `${calls.length} SLOWLOG ${calls.length === 1 ? 'entry' : 'entries'} of the package's functions${logged}: ` +
        `${[...byFunction].map(([name, n]) => `${name} ×${n}`).join(', ')}; longest ${formatUs(longest.durationUs)} ` +
        `(${longest.functionName}${longest.key ? ` on ${longest.key}` : ''}), ${(share * 100).toFixed(1)}% of ${threshold}`,
      meaning:
        severity === 'problem'
          ? 'a call this long blocks Redis; past the threshold other clients get BUSY errors until it ends'
          : 'a limiter call takes tens of µs; longer ones come from big log keys (each call trims the expired entries)',
      action:
        severity === 'ok'
          ? null
          : 'look at the keys check for big log keys; a bounded-memory window (precisionMs, rate_limit_v2) keeps calls short',
      details: { calls, busyThresholdMs: settings.busyThresholdMs, busySetting: settings.busySetting },
    });
  }

  if (latency.length === 0) {
    const off = settings.latencyMonitorThresholdMs === 0;
    findings.push({
      severity: 'ok',
      code: off ? 'latency-monitor-off' : 'latency-clean',
      node: address,
      summary: off
        ? 'LATENCY LATEST: the latency monitor is off (latency-monitor-threshold 0)'
        : 'LATENCY LATEST: no event',
      meaning: off
        ? 'Redis records no latency spikes'
        : 'no spike above latency-monitor-threshold since the last reset',
      action: off ? `to record spikes: CONFIG SET latency-monitor-threshold 100 (ms) on ${address}` : null,
    });
  } else {
    findings.push({
      severity: 'warning',
      code: 'latency-events',
      node: address,
      summary: `LATENCY LATEST: ${latency.map((e) => `${e.event} latest ${e.latestMs} ms, max ${e.maxMs} ms`).join('; ')}`,
      meaning: 'Redis paused longer than latency-monitor-threshold; every limiter call waiting behind it was late',
      action: 'see LATENCY DOCTOR on that node; "command" events with the slow log above point at big keys',
      details: { events: latency },
    });
  }
  if (settings.configRefused) {
    findings.push({
      severity: 'ok',
      code: 'slowness-config-refused',
      node: address,
      summary: `CONFIG GET was refused (${settings.configRefused}): compared with the default ${DEFAULT_BUSY_THRESHOLD_MS} ms`,
      meaning: 'managed Redis services often disable CONFIG; the thresholds above are assumptions',
      action: null,
    });
  }
  return findings;
}

function formatUs(us: number): string {
  return us >= 1000 ? `${(us / 1000).toFixed(1)} ms` : `${us} µs`;
}
