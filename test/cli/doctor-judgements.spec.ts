import type { Redis } from 'ioredis';
import { checkCluster } from '../../lib/cli/doctor/cluster-check';
import type { DoctorNode } from '../../lib/cli/doctor/doctor-nodes';
import { judgeMemory } from '../../lib/cli/doctor/memory-check';
import { judgeSlowness, type SlownessSettings } from '../../lib/cli/doctor/slowness-check';

/* The thresholds of the judgements, with figures a test server cannot easily produce. */
describe('doctor judgements', () => {
  const settings: SlownessSettings = {
    busyThresholdMs: 100,
    busySetting: 'busy-reply-threshold',
    slowlogSlowerThanUs: 10_000,
    latencyMonitorThresholdMs: 0,
  };
  const call = (durationUs: number) => ({
    functionName: 'sliding_allow_v2',
    command: 'FCALL',
    durationUs,
    timestamp: 1,
    key: 'rl:k',
  });

  it.each([
    [200, 'ok'],
    [1000, 'warning'],
    [9_999, 'warning'],
    [50_000, 'problem'],
  ])('a %d µs call against busy-reply-threshold 100 ms is %s', (durationUs, severity) => {
    const [finding] = judgeSlowness('n', settings, [call(durationUs)], []);
    expect(finding).toMatchObject({ code: 'slowlog-function-calls', severity });
    if (severity === 'problem') expect(finding.meaning).toMatch(/BUSY errors/);
  });

  it('lua-time-limit stands in for busy-reply-threshold on servers that only know it', () => {
    const [finding] = judgeSlowness('n', { ...settings, busySetting: 'lua-time-limit' }, [call(60_000)], []);
    expect(finding.summary).toMatch(/60\.0% of lua-time-limit 100 ms$/);
  });

  it.each([
    ['noeviction', 0, 'ok', 'memory-unbounded'],
    ['noeviction', 0.5, 'ok', 'memory-noeviction'],
    ['noeviction', 0.8, 'warning', 'memory-noeviction'],
    ['noeviction', 0.95, 'problem', 'memory-noeviction'],
    ['noeviction', 1.2, 'problem', 'memory-noeviction'],
    ['allkeys-lru', 0.1, 'warning', 'memory-evicts-limiter-keys'],
    ['allkeys-random', 0.1, 'warning', 'memory-evicts-limiter-keys'],
    ['volatile-ttl', 0.1, 'warning', 'memory-evicts-limiter-keys'],
  ])('maxmemory-policy %s at %d full is %s', (policy, share, severity, code) => {
    const maxmemoryBytes = share === 0 ? 0 : 1000;
    const finding = judgeMemory('n', { maxmemoryBytes, policy, usedBytes: Math.round(share * 1000) || 10 });
    expect(finding).toMatchObject({ severity, code });
  });

  it('noeviction with room to spare is the configuration the other advice leads to: ok, nothing to do', () => {
    const finding = judgeMemory('n', { maxmemoryBytes: 1024 * 1024 * 1024, policy: 'noeviction', usedBytes: 2e6 });
    expect(finding).toMatchObject({ severity: 'ok', action: null });
    expect(finding.summary).toMatch(/1\.9 MB of 1\.00 GB used \(0\.2%\)/);
    // The advice for an evicting policy leads here, and nowhere else.
    const evicting = judgeMemory('n', { maxmemoryBytes: 1024 * 1024 * 1024, policy: 'allkeys-lru', usedBytes: 2e6 });
    expect(evicting.action).toMatch(/noeviction/);
  });

  it.each([
    [0.8, 'warning', /nearly full \(80\.0%\)/, /nearly full/],
    [0.95, 'problem', /nearly full \(95\.0%\)/, /nearly full/],
    [1.21, 'problem', /over maxmemory \(121\.0%\)/, /over maxmemory: every limiter write fails with OOM now/],
  ])('noeviction %d full is a %s worded for its share', (share, severity, summary, action) => {
    const maxmemoryBytes = 1_400_000;
    const finding = judgeMemory('n', { maxmemoryBytes, policy: 'noeviction', usedBytes: share * maxmemoryBytes });
    expect(finding.severity).toBe(severity);
    expect(finding.summary).toMatch(summary);
    expect(finding.action).toMatch(action);
    if (share > 1) expect(`${finding.summary} ${finding.action}`).not.toMatch(/nearly/);
  });

  it('judges replication from each side: a replica out of sync is a problem, one heard from long ago a warning', async () => {
    const node = (address: string, role: DoctorNode['role'], replication: string): DoctorNode => ({
      address,
      role,
      client: { info: () => Promise.resolve(replication) } as unknown as Redis,
    });
    const nodes = [
      node('10.0.0.1:6379', 'master', 'role:master\r\nslave0:ip=10.0.0.2,port=6379,state=wait_bgsave,lag=0\r\n'),
      node('10.0.0.4:6379', 'master', 'role:master\r\nslave0:ip=10.0.0.5,port=6379,state=online,lag=30\r\n'),
      node('10.0.0.2:6379', 'replica', 'role:slave\r\nmaster_link_status:up\r\nmaster_last_io_seconds_ago:2\r\n'),
      node('10.0.0.5:6379', 'replica', 'role:slave\r\nmaster_link_status:up\r\nmaster_last_io_seconds_ago:20\r\n'),
    ];
    const findings = await checkCluster({ isCluster: false } as never, { nodes, unreachable: [], close: () => {} });
    expect(findings.map((f) => [f.severity, f.code, f.node, f.summary])).toEqual([
      [
        'problem',
        'replica-not-online',
        '10.0.0.2:6379',
        '10.0.0.1:6379 sees its replica 10.0.0.2:6379 in state wait_bgsave',
      ],
      [
        'warning',
        'replica-lagging',
        '10.0.0.5:6379',
        '10.0.0.4:6379 last heard from its replica 10.0.0.5:6379 30 s ago',
      ],
      ['warning', 'replica-lagging', '10.0.0.5:6379', 'replica 10.0.0.5:6379: last contact with its master 20 s ago'],
    ]);
    const healthy = await checkCluster({ isCluster: false } as never, {
      nodes: [nodes[2]],
      unreachable: [],
      close: () => {},
    });
    expect(healthy.map((f) => [f.severity, f.code, f.summary])).toEqual([
      ['ok', 'replication-ok', '1 replica of 0 masters, all linked and in sync'],
    ]);
  });
});
