import type { RedisConnection } from '../../core/redis-connection';
import { isCluster } from '../../redis/redis-nodes';
import { listSome, plural } from '../format';
import type { DoctorNode, DoctorNodes } from './doctor-nodes';
import type { FindingInput } from './findings';
import { integerOf, parseClusterNodes, parseClusterSlots, parseInfoFields, parseReplicas } from './replies';

const CLUSTER_SLOTS = 16384;
/** A replica whose last contact with its master is older than this, in seconds, is lagging. */
const REPLICA_LAG_WARNING_S = 10;

/** Cluster and replication: every slot served, no node failing; every replica's link up and recent. */
export async function checkCluster(connection: RedisConnection, found: DoctorNodes): Promise<FindingInput[]> {
  const findings: FindingInput[] = [];
  const masters = found.nodes.filter((node) => node.role === 'master');
  if (isCluster(connection)) findings.push(...(await checkSlots(masters)));
  findings.push(...(await checkReplication(found)));
  return findings;
}

async function checkSlots(masters: readonly DoctorNode[]): Promise<FindingInput[]> {
  const findings: FindingInput[] = [];
  let healthy = true;
  for (const node of masters) {
    const info = parseInfoFields(await node.client.call('CLUSTER', 'INFO'));
    const state = info.get('cluster_state') ?? 'unknown';
    const assigned = integerOf(info.get('cluster_slots_assigned')) ?? 0;
    const failing =
      (integerOf(info.get('cluster_slots_fail')) ?? 0) + (integerOf(info.get('cluster_slots_pfail')) ?? 0);
    if (state !== 'ok' || assigned < CLUSTER_SLOTS || failing > 0) {
      healthy = false;
      findings.push({
        severity: 'problem',
        code: 'cluster-state',
        node: node.address,
        summary: `cluster_state ${state}, ${assigned} of ${CLUSTER_SLOTS} slots assigned, ${failing} slots on failing nodes`,
        meaning: 'calls for keys in uncovered or failing slots are refused (CLUSTERDOWN) and the limiter falls back',
        action: `assign the missing slots or bring the failed master back: redis-cli --cluster check ${node.address}, then --cluster fix`,
        details: Object.fromEntries(info),
      });
    }
  }
  // Each master's own view: a master that lost a slot knows it before the others learn it.
  for (const node of masters) {
    const ranges = parseClusterSlots(await node.client.call('CLUSTER', 'SLOTS'));
    const covered = new Set<number>();
    for (const range of ranges) for (let slot = range.from; slot <= range.to; slot++) covered.add(slot);
    if (covered.size === CLUSTER_SLOTS) continue;
    healthy = false;
    findings.push({
      severity: 'problem',
      code: 'slots-uncovered',
      node: node.address,
      summary: `CLUSTER SLOTS on ${node.address} covers ${covered.size} of ${CLUSTER_SLOTS} slots: missing ${missingRanges(covered)}`,
      meaning: 'keys hashing to those slots have no master: every limiter call for them fails',
      action: `assign the slots: redis-cli --cluster fix ${node.address}`,
    });
  }
  const [first] = masters;
  const failed = parseClusterNodes(await first.client.call('CLUSTER', 'NODES')).filter((n) =>
    n.flags.some((flag) => flag === 'fail' || flag === 'fail?' || flag === 'noaddr'),
  );
  for (const node of failed) {
    healthy = false;
    findings.push({
      severity: 'problem',
      code: 'cluster-node-failing',
      node: node.address,
      summary: `CLUSTER NODES flags ${node.address} (${node.id.slice(0, 8)}) as ${node.flags.join(',')}`,
      meaning:
        'a failing master leaves its slots unserved until a replica takes over; a failing replica protects nothing',
      action: 'restart or replace the node; CLUSTER FORGET it if it is gone for good',
    });
  }
  if (healthy) {
    findings.push({
      severity: 'ok',
      code: 'cluster-ok',
      node: null,
      summary: `cluster_state ok on ${plural(masters.length, 'master')}; all ${CLUSTER_SLOTS} slots served; no failing node`,
      meaning: 'every key has a master to decide it',
      action: null,
    });
  }
  return findings;
}

async function checkReplication(found: DoctorNodes): Promise<FindingInput[]> {
  const findings: FindingInput[] = found.unreachable.map(({ address, master, error }) => ({
    severity: 'warning',
    code: 'replica-unreachable',
    node: address,
    summary: `replica ${address} of ${master} could not be reached from here (${error.split('\n')[0]})`,
    meaning: 'the doctor cannot check its functions or lag (it may announce an address only its master can reach)',
    action: 'run the doctor from a host that reaches the replicas, or check that replica by hand',
  }));
  // Masters first (findNodes sorts them so): each master's view of its replicas, then each replica's own.
  for (const node of found.nodes) {
    const info = parseInfoFields(await node.client.info('replication'));
    if (node.role === 'master') {
      for (const { address, fields } of parseReplicas(info)) {
        const state = fields.get('state') ?? 'unknown';
        findings.push(
          ...replicaFindings(address, state === 'online', integerOf(fields.get('lag')), {
            code: 'replica-not-online',
            summary: `${node.address} sees its replica ${address} in state ${state}`,
            meaning: 'the replica is not in sync: a failover to it would lose limiter counts and maybe functions',
            action: 'wait for the sync to finish; if it repeats, check the replica log and repl-backlog-size',
            lagging: `${node.address} last heard from its replica ${address}`,
          }),
        );
      }
      continue;
    }
    const link = info.get('master_link_status') ?? 'unknown';
    findings.push(
      ...replicaFindings(node.address, link === 'up', integerOf(info.get('master_last_io_seconds_ago')), {
        code: 'replica-link-down',
        summary: `replica ${node.address}: master_link_status ${link} (master ${info.get('master_host')}:${info.get('master_port')})`,
        meaning: 'it receives no writes: its keys and functions fall behind its master',
        action: 'check the replica log, its masterauth and the network to its master',
        lagging: `replica ${node.address}: last contact with its master`,
      }),
    );
  }
  if (!findings.some((f) => f.severity !== 'ok')) {
    const masters = found.nodes.filter((node) => node.role === 'master').length;
    const replicas = found.nodes.length - masters;
    findings.push({
      severity: 'ok',
      code: 'replication-ok',
      node: null,
      summary:
        replicas === 0
          ? `${plural(masters, 'master')}, no replica`
          : `${plural(replicas, 'replica')} of ${plural(masters, 'master')}, all linked and in sync`,
      meaning:
        replicas === 0 ? 'nothing to fail over to: a master restart loses its counts' : 'a failover keeps the counts',
      action: null,
    });
  }
  return findings;
}

/** A replica out of sync is a problem; one last heard from over {@link REPLICA_LAG_WARNING_S} ago, a warning. */
function replicaFindings(
  node: string,
  inSync: boolean,
  lagS: number | undefined,
  outOfSync: Pick<FindingInput, 'code' | 'summary' | 'meaning' | 'action'> & { lagging: string },
): FindingInput[] {
  const { lagging, ...problem } = outOfSync;
  if (!inSync) return [{ severity: 'problem', node, ...problem }];
  if (lagS === undefined || lagS <= REPLICA_LAG_WARNING_S) return [];
  return [
    {
      severity: 'warning',
      code: 'replica-lagging',
      node,
      summary: `${lagging} ${lagS} s ago`,
      meaning: 'a lagging replica would lose recent requests on failover: limits under-count for a window',
      action: 'check the network and the load of the replica',
    },
  ];
}

function missingRanges(covered: ReadonlySet<number>): string {
  const ranges: string[] = [];
  let start = -1;
  for (let slot = 0; slot <= CLUSTER_SLOTS; slot++) {
    const missing = slot < CLUSTER_SLOTS && !covered.has(slot);
    if (missing && start < 0) start = slot;
    if (!missing && start >= 0) {
      ranges.push(start === slot - 1 ? String(start) : `${start}-${slot - 1}`);
      start = -1;
    }
  }
  return listSome(ranges);
}
