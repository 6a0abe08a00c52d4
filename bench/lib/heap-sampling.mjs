// In the app (http-app.mjs): V8's sampling heap profiler through node:inspector, started and stopped
// on the parent's request (see app-heap.mjs). Collected objects are counted too: a request's garbage is
// what it costs the collector, and most of it dies young.
import { Session } from 'node:inspector';

/** A sampler of the current process's allocations: `start(samplingInterval)`, then `stop()`. */
export function heapSampler() {
  const session = new Session();
  session.connect();
  const post = (method, params = {}) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  return {
    /** Samples an allocation every `samplingInterval` bytes on average, collected objects included. */
    async start(samplingInterval) {
      await post('HeapProfiler.enable');
      await post('HeapProfiler.startSampling', {
        samplingInterval,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    },
    /**
     * Stops sampling and returns the profile's call tree (`{ callFrame, selfSize, children }`, sizes
     * already scaled to bytes allocated), without its list of samples (over a million at 128 bytes),
     * then collects that garbage, so the next measurement does not pay for it.
     */
    async stop() {
      const { profile } = await post('HeapProfiler.stopSampling');
      const tree = profile.head;
      profile.samples = null;
      await post('HeapProfiler.collectGarbage');
      return tree;
    },
  };
}
