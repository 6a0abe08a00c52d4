// A closed-loop HTTP client with sub-millisecond resolution: one keep-alive connection, one request at
// a time, each timed with process.hrtime.bigint() (nanoseconds) into a perf_hooks histogram. Where
// autocannon rounds every latency to a whole millisecond, this resolves the ~0.1 ms a Redis round
// trip adds on loopback, and its percentiles reach p99.9.
import http from 'node:http';
import { createHistogram, performance } from 'node:perf_hooks';

/** A client for one route: `run(ms, histogram)` sends requests one after the other for `ms`. */
export function closedLoopClient(url, headers = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () =>
    new Promise((resolve, reject) => {
      const request = http.get(url, { agent, headers }, (response) => {
        response.resume();
        response.once('end', () => resolve(response.statusCode));
        response.once('error', reject);
      });
      request.once('error', reject);
    });
  return {
    /** Requests for `ms`; 2xx latencies (ns) go to `histogram`. Returns `{ ok, failed, seconds }`. */
    async run(ms, histogram = createHistogram()) {
      let ok = 0;
      let failed = 0;
      const began = performance.now();
      const stopAt = began + ms;
      while (performance.now() < stopAt) {
        const sentAt = process.hrtime.bigint();
        const status = await get();
        const took = process.hrtime.bigint() - sentAt;
        if (status >= 200 && status < 300) {
          histogram.record(took);
          ok++;
        } else failed++;
      }
      return { ok, failed, seconds: (performance.now() - began) / 1000 };
    },
    close() {
      agent.destroy();
    },
  };
}

/** The percentiles the latency section reports, as histogram arguments, and their names. */
export const PERCENTILES = [
  ['p50', 50],
  ['p90', 90],
  ['p99', 99],
  ['p99.9', 99.9],
];

/** `{ p50, p90, p99, 'p99.9' }` of `histogram` in microseconds. */
export function percentilesMicros(histogram) {
  return Object.fromEntries(PERCENTILES.map(([name, p]) => [name, histogram.percentile(p) / 1000]));
}
