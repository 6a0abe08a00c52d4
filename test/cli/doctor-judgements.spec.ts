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
});
