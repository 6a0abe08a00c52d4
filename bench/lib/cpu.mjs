// CPU time per decision: the figure that holds on a shared host. Decisions/s move with whatever else
// the machine runs; the CPU a decision takes (this process's, plus the Redis server's) moves far less.
// Redis' CPU comes from INFO cpu (getrusage, microsecond resolution), not /proc ticks (10 ms).

/** Redis' CPU seconds so far (user + system, every thread), from INFO cpu on `client`'s server. */
export async function redisCpuSeconds(client) {
  const info = await client.info('cpu');
  const field = (name) => Number(info.match(new RegExp(`^${name}:([\\d.]+)`, 'm'))?.[1] ?? NaN);
  return field('used_cpu_sys') + field('used_cpu_user');
}

/** This process's CPU seconds so far (user + system, every thread). */
export function ownCpuSeconds() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/**
 * Runs `run()` and returns `{ result, clientSeconds, redisSeconds }`: the CPU this process and the
 * Redis servers behind `stats` (one ioredis client or a list, one per server) used meanwhile.
 */
export async function withCpu(stats, run) {
  const servers = Array.isArray(stats) ? stats : [stats];
  const redisBefore = await Promise.all(servers.map(redisCpuSeconds));
  const clientBefore = ownCpuSeconds();
  const result = await run();
  const clientSeconds = ownCpuSeconds() - clientBefore;
  const redisAfter = await Promise.all(servers.map(redisCpuSeconds));
  const perServer = redisAfter.map((after, i) => after - redisBefore[i]);
  return { result, clientSeconds, redisSeconds: perServer.reduce((a, b) => a + b, 0), perServer };
}

/** A running sum of CPU and decisions, read as microseconds per decision. */
export function cpuSum() {
  const sum = { decisions: 0, clientSeconds: 0, redisSeconds: 0, wallSeconds: 0 };
  return {
    sum,
    add({ clientSeconds, redisSeconds }, decisions, wallSeconds = 0) {
      sum.decisions += decisions;
      sum.clientSeconds += clientSeconds;
      sum.redisSeconds += redisSeconds;
      sum.wallSeconds += wallSeconds;
    },
    /** `{ cpuMicros, clientMicros, redisMicros }` per decision. */
    perDecision() {
      const per = (seconds) => (seconds * 1e6) / sum.decisions;
      return {
        cpuMicros: per(sum.clientSeconds + sum.redisSeconds),
        clientMicros: per(sum.clientSeconds),
        redisMicros: per(sum.redisSeconds),
      };
    },
  };
}

/** "14.9 µs (client 9.1 + Redis 5.8)" from cpuSum().perDecision() (or medians of it). */
export function describeCpu({ cpuMicros, clientMicros, redisMicros }, client = 'client') {
  return `${cpuMicros.toFixed(1)} µs (${client} ${clientMicros.toFixed(1)} + Redis ${redisMicros.toFixed(1)})`;
}
