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
    ['noeviction', 0.5, 'warning', 'memory-noeviction'],
    ['noeviction', 0.95, 'problem', 'memory-noeviction'],
    ['allkeys-lru', 0.1, 'warning', 'memory-evicts-limiter-keys'],
    ['allkeys-random', 0.1, 'warning', 'memory-evicts-limiter-keys'],
    ['volatile-ttl', 0.1, 'warning', 'memory-evicts-limiter-keys'],
  ])('maxmemory-policy %s at %d full is %s', (policy, share, severity, code) => {
    const maxmemoryBytes = share === 0 ? 0 : 1000;
    const finding = judgeMemory('n', { maxmemoryBytes, policy, usedBytes: Math.round(share * 1000) || 10 });
    expect(finding).toMatchObject({ severity, code });
  });
});
