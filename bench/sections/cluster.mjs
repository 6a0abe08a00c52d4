// 12. A local Redis Cluster of 3 masters (redis-server --cluster-enabled yes on free loopback ports,
//     redis-cli --cluster create, no replicas) against the run's single Redis: consume() (defaults)
//     and a bare FCALL of the article's sliding_allow_v1 over many keys at 64 in flight, through an
//     ioredis Cluster client and a plain client, interleaved in slices per round. Per master: its CPU
//     (INFO cpu) per decision it decided (its share of the hash slots; the keys are spread evenly). On
//     one 2-core host the masters share the cores, so requests/s says nothing about a cluster's
//     capacity; what carries over is the CPU a decision costs a master. From it, an estimate (labelled
//     as such, not a measurement) of what 10 masters, each on its own core, would sustain.
import { join } from 'node:path';
import { cpuSum, withCpu } from '../lib/cpu.mjs';
import { BARE_FUNCTION, bareAdmitted, bareFcall, loadFunction, memberSource, outcomeOf } from '../lib/decisions.mjs';
import { compact, drive, interleaved, median } from '../lib/measure.mjs';
import { freePort, outputReady, redisServerArgs, runCommand, stopChild, tempDir, track } from '../lib/processes.mjs';
import { deleteMatching } from '../lib/redis-stats.mjs';
import { log } from '../lib/report.mjs';
import { writeLinePlot } from '../lib/svg-plot.mjs';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const Redis = require('ioredis').default;
const RULE = { limit: 1000, windowMs: 60_000 };
const ESTIMATE_MASTERS = 10;

/** Starts one cluster-enabled redis-server on a free port (its bus port, +10000, must be free too). */
async function startClusterNode() {
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    if (port > 55_000) continue;
    const dir = tempDir('sliding-bench-cluster-');
    const args = [...redisServerArgs(port, dir), '--daemonize', 'no'];
    args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'));
    const child = track(spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    try {
      await outputReady(child, 'a cluster-enabled redis-server', 10_000);
      return { port, child };
    } catch {
      await stopChild(child);
    }
  }
  throw new Error('could not start a cluster-enabled redis-server');
}

export async function cluster({ settings, report, redis, build, resultsDir }) {
  const { rounds, quick, cluster: c } = settings;
  log(`12 cluster: ${c.masters} masters against one Redis, ${compact(c.keys)} keys, 64 in flight`);
  const nodes = [];
  let clusterClient;
  const statsClients = [];
  const limiters = [];
  try {
    for (let i = 0; i < c.masters; i++) nodes.push(await startClusterNode());
    await runCommand(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'],
      60_000,
    );
    for (const node of nodes) {
      const client = new Redis({ host: '127.0.0.1', port: node.port });
      statsClients.push(client);
      for (let waited = 0; !(await client.cluster('INFO')).includes('cluster_state:ok'); waited += 200) {
        if (waited > 30_000) throw new Error(`cluster node ${node.port} not ok after 30 s`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    // The share of the hash slots each master holds: its share of evenly spread keys.
    const slotShare = {};
    for (const [from, to, [, port]] of await statsClients[0].cluster('SLOTS'))
      slotShare[port] = (slotShare[port] ?? 0) + (to - from + 1) / 16_384;
    clusterClient = new Redis.Cluster(
      nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
      {
        scaleReads: 'master',
      },
    );
    const ours = {
      cluster: new build.SlidingWindowLimiter({ client: clusterClient, keyPrefix: 's12:' }),
      single: new build.SlidingWindowLimiter({ client: redis.plain, keyPrefix: 's12:' }),
    };
    limiters.push(...Object.values(ours));
    for (const limiter of limiters) await limiter.init();
    // The limiters load the default library on every master; the bare FCALL's library is loaded too.
    await loadFunction(build.SlidingWindowLimiter, clusterClient, BARE_FUNCTION);
    const next = memberSource();
    const key = (i) => String((i * 2_654_435_761) % c.keys);
    const bare = (client) => (i) => bareFcall(client, `s12:${key(i)}`, Date.now(), RULE, next()).then(bareAdmitted);
    const variants = {
      clusterOurs: { stats: statsClients, call: (i) => ours.cluster.consume(key(i), RULE).then(outcomeOf) },
      clusterBare: { stats: statsClients, call: bare(clusterClient) },
      singleOurs: { stats: [redis.stats], call: (i) => ours.single.consume(key(i), RULE).then(outcomeOf) },
      singleBare: { stats: [redis.stats], call: bare(redis.plain) },
    };
    const ids = Object.keys(variants);
    const run = (id, durationMs) =>
      withCpu(variants[id].stats, () =>
        drive({ inFlight: 64, warmupMs: 0, durationMs, maxOps: 1_000_000, call: variants[id].call }),
      );
    // Warm-up: JIT, connections, the slot map, and every key touched once.
    for (const id of ids) await run(id, quick ? 200 : 1000);
    const perRound = Object.fromEntries(ids.map((id) => [id, []]));
    for (let round = 0; round < rounds; round++) {
      const sums = Object.fromEntries(ids.map((id) => [id, { cpu: cpuSum(), perServer: [] }]));
      for (const id of interleaved(ids, c.slices, round)) {
        const m = await run(id, c.sliceMs);
        if (m.result.errors > 0) throw new Error(`cluster ${id}: ${m.result.firstError?.message}`);
        sums[id].cpu.add(m, m.result.calls, m.result.seconds);
        m.perServer.forEach((seconds, i) => (sums[id].perServer[i] = (sums[id].perServer[i] ?? 0) + seconds));
      }
      for (const id of ids) {
        const { cpu, perServer } = sums[id];
        const decisions = cpu.sum.decisions;
        const ports = variants[id].stats === statsClients ? nodes.map((n) => n.port) : [redis.port];
        perRound[id].push({
          perSecond: decisions / cpu.sum.wallSeconds,
          ...cpu.perDecision(),
          // Each master's CPU per decision it decided (decisions × its slot share).
          perMaster: perServer.map((seconds, i) =>
            ports.length === 1 ? (seconds * 1e6) / decisions : (seconds * 1e6) / (decisions * slotShare[ports[i]]),
          ),
        });
      }
      log(`  round ${round + 1}/${rounds} done`);
    }
    const med = (id, name) => median(perRound[id].map((r) => r[name]));
    const medMaster = (id) => nodes.map((_, i) => median(perRound[id].map((r) => r.perMaster[i])));
    const results = { masters: c.masters, keys: c.keys, slotShare, perRound, estimate: {} };
    for (const kind of ['Ours', 'Bare']) {
      const label = kind === 'Ours' ? 'consume()' : 'bare FCALL';
      const perMaster = medMaster(`cluster${kind}`);
      const single = med(`single${kind}`, 'redisMicros');
      const worst = Math.max(...perMaster);
      // Estimate: each master on a core of its own, saturated, keys spread evenly; the slowest
      // master's cost sets the pace. Clients, network and resharding are left out.
      const estimate = (ESTIMATE_MASTERS * 1e6) / worst;
      results.estimate[kind.toLowerCase()] = { perMaster, single, estimate, singleCapacity: 1e6 / single };
      report.row('12 cluster', `${label}: Redis CPU per decision, per master (3-master cluster)`, {
        value: median(perMaster),
        unit: 'µs',
        digits: 2,
        absolute:
          `masters ${perMaster.map((v) => v.toFixed(2)).join(', ')} µs; one Redis ${single.toFixed(2)} µs; ` +
          `cluster ${compact(med(`cluster${kind}`, 'perSecond'))}/s vs one Redis ${compact(med(`single${kind}`, 'perSecond'))}/s on this 2-core host; ` +
          `client CPU ${med(`cluster${kind}`, 'clientMicros').toFixed(1)} vs ${med(`single${kind}`, 'clientMicros').toFixed(1)} µs`,
      });
      report.row('12 cluster', `${label}: ESTIMATE, ${ESTIMATE_MASTERS} masters on a core each, decisions/s`, {
        value: estimate,
        unit: '/s',
        digits: 0,
        absolute: `10 × 1 core ÷ ${worst.toFixed(2)} µs (the costliest master's CPU per decision); one Redis on one core: ${compact(1e6 / single)}/s by the same rule`,
      });
    }
    report.record('cluster', results);
    const oursEstimate = results.estimate.ours;
    const bareEstimate = results.estimate.bare;
    writeLinePlot(join(resultsDir, `${quick ? 'quick-' : ''}cluster.svg`), {
      title: 'Decisions/s the masters sustain, one core each (estimate)',
      note: `from measured Redis CPU per decision; ${ESTIMATE_MASTERS} masters: estimate (hollow)`,
      xLabel: 'masters, each on a core of its own',
      yLabel: 'decisions/s (1 core ÷ measured CPU per decision)',
      series: [
        {
          name: 'consume()',
          points: [
            [1, oursEstimate.singleCapacity],
            [c.masters, (c.masters * 1e6) / Math.max(...oursEstimate.perMaster)],
            [ESTIMATE_MASTERS, oursEstimate.estimate, { open: true }],
          ],
        },
        {
          name: 'bare FCALL',
          points: [
            [1, bareEstimate.singleCapacity],
            [c.masters, (c.masters * 1e6) / Math.max(...bareEstimate.perMaster)],
            [ESTIMATE_MASTERS, bareEstimate.estimate, { open: true }],
          ],
        },
      ],
    });
  } finally {
    for (const limiter of limiters) await limiter.close?.();
    clusterClient?.disconnect();
    for (const client of statsClients) client.disconnect();
    for (const node of nodes) await stopChild(node.child);
    await deleteMatching(redis.plain, 's12:*');
  }
}
