import type Redis from 'ioredis';
import { nodeAddress } from '../../lib/redis/redis-nodes';
import { librarySource } from '../support/lua-functions';
import { useRedisCluster, waitForClusterOk } from '../support/redis-cluster';
import { sleep } from '../support/sleep';
import { waitFor } from '../support/wait-for';
import { doctorJson, findingsOf, notOk } from './doctor-helpers';

describe('doctor on a Redis Cluster (3 masters, no replicas)', () => {
  const own = useRedisCluster({ masters: 3, replicasPerMaster: 0 });
  let masters: Redis[];
  let seeds: string;

  beforeAll(async () => {
    masters = own.masters();
    seeds = `127.0.0.1:${own.cluster().seeds[0].port}`;
    // On a busy host a limiter call can pass the default 10 ms; no test here looks for slow calls.
    await Promise.all(masters.map((node) => node.config('SET', 'slowlog-log-slower-than', '-1')));
  });
  beforeEach(async () => {
    await Promise.all(masters.map((node) => node.function('FLUSH')));
  });

  it('a library missing on one master is a problem naming that master; loaded on all, exit 0', async () => {
    const [a, b, c] = masters;
    await a.call('FUNCTION', 'LOAD', librarySource('v2'));
    await b.call('FUNCTION', 'LOAD', librarySource('v2'));

    const { code, doc } = await doctorJson(['--cluster', seeds]);
    expect(notOk(doc)).toEqual([`problem library-missing ${nodeAddress(c)}`]);
    expect(code).toBe(2);
    expect(doc.nodes).toEqual(masters.map((m) => ({ node: nodeAddress(m), role: 'master', master: null })));
    const [missing] = findingsOf(doc, 'library-missing');
    expect(missing.summary).toBe(
      `rate_limit_v2 (v2) is not loaded on ${nodeAddress(c)} (master); loaded on another node`,
    );
    expect(missing.action).toBe(`run: npx nestjs-sliding-limit functions load v2 --cluster ${seeds}`);
    expect(findingsOf(doc, 'cluster-ok')[0].summary).toBe(
      'cluster_state ok on 3 masters; all 16384 slots served; no failing node',
    );

    // The cluster replies (CLUSTER INFO, SLOTS, NODES) read the same under RESP2.
    const resp2 = await doctorJson(['--cluster', seeds, '--resp', '2']);
    expect(resp2.doc.findings.map((f) => f.code)).toEqual(doc.findings.map((f) => f.code));

    await c.call('FUNCTION', 'LOAD', librarySource('v2'));
    const fixed = await doctorJson(['--cluster', seeds]);
    expect(notOk(fixed.doc)).toEqual([]);
    expect(fixed.code).toBe(0);
  });

  it('samples the keys of every master', async () => {
    const client = own.client();
    await Promise.all(Array.from({ length: 30 }, (_, i) => client.set(`rl:sample:{${i}}`, '1', 'PX', 60_000)));
    await client.set('rl:forever:{7}', '1');
    const { code, doc } = await doctorJson(['--cluster', seeds]);
    const sampled = findingsOf(doc, 'keys-sampled');
    expect(sampled.map((f) => f.node)).toEqual(masters.map(nodeAddress));
    expect(sampled.reduce((sum, f) => sum + Number(f.details?.sampled), 0)).toBe(31);
    const [forever] = findingsOf(doc, 'key-without-ttl');
    expect(forever.summary).toBe('1 key under rl: without a TTL: rl:forever:{7}');
    expect(code).toBe(2);
    await client.del('rl:forever:{7}');
    await Promise.all(Array.from({ length: 30 }, (_, i) => client.del(`rl:sample:{${i}}`)));
  });

  it('a slot without a master is a problem (run last: it breaks the cluster until the slot is added back)', async () => {
    const owner = await ownerOfSlot(16383);
    await owner.call('CLUSTER', 'DELSLOTS', '16383');
    try {
      await waitFor(
        () => owner.call('CLUSTER', 'INFO'),
        (info) => String(info).includes('cluster_state:fail'),
      );
      // Seeded with the failing node itself: connecting must not wait for the cluster to be ok.
      const { code, doc } = await doctorJson(['--cluster', nodeAddress(owner)]);
      expect(code).toBe(2);
      const uncovered = findingsOf(doc, 'slots-uncovered');
      expect(uncovered.map((f) => f.summary)).toContain(
        `CLUSTER SLOTS on ${nodeAddress(owner)} covers 16383 of 16384 slots: missing 16383`,
      );
      expect(findingsOf(doc, 'cluster-state').length).toBeGreaterThan(0);
    } finally {
      await owner.call('CLUSTER', 'ADDSLOTS', '16383');
      await waitForClusterOk(own.cluster().nodes);
    }
  });

  async function ownerOfSlot(slot: number): Promise<Redis> {
    for (const master of masters) {
      const ranges = (await master.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      const range = ranges.find(([from, to]) => slot >= from && slot <= to);
      if (range) return masters.find((m) => m.options.port === Number(range[2][1])) as Redis;
    }
    throw new Error(`no owner of slot ${slot}`);
  }
});

describe('doctor on a Redis Cluster with replicas (3 masters + 3 replicas)', () => {
  const own = useRedisCluster({ masters: 3, replicasPerMaster: 1 });
  beforeAll(async () => {
    const masters = own.masters();
    await Promise.all(masters.map((node) => node.config('SET', 'slowlog-log-slower-than', '-1')));
    await Promise.all(masters.map((node) => node.call('FUNCTION', 'LOAD', librarySource('v2'))));
  });

  it('checks every replica too: its functions and its link to its master', async () => {
    const seeds = `127.0.0.1:${own.cluster().seeds[0].port}`;
    // A replica gets the library through replication, and ioredis' slot map lists it once it is in sync.
    let result = await doctorJson(['--cluster', seeds]);
    for (const deadline = Date.now() + 15_000; notOk(result.doc).length > 0 && Date.now() < deadline;) {
      await sleep(100);
      result = await doctorJson(['--cluster', seeds]);
    }
    const { code, doc } = result;
    expect(notOk(doc)).toEqual([]);
    expect(code).toBe(0);
    const replicas = doc.nodes.filter((n) => n.role === 'replica');
    expect(replicas).toHaveLength(3);
    const masters = doc.nodes.filter((n) => n.role === 'master').map((n) => n.node);
    expect(new Set(replicas.map((r) => r.master))).toEqual(new Set(masters));
    expect(findingsOf(doc, 'library-ok')[0].summary).toBe(
      'rate_limit_v2 (v2) is loaded with the bundled code on all 6 nodes',
    );
    expect(findingsOf(doc, 'replication-ok')[0].summary).toBe('3 replicas of 3 masters, all linked and in sync');
  });
});
