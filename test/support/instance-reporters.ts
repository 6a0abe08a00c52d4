import { InstanceReporter, type InstanceReporterOptions } from '../../lib/limiter/instance-reporter';

/**
 * A maker of instance reporters for the calling block that stops every reporter it made after each
 * test: a started reporter keeps a timer (unref'd, but writing to Redis until stopped).
 */
export function useInstanceReporters(): (options: InstanceReporterOptions) => InstanceReporter {
  const made: InstanceReporter[] = [];
  afterEach(() => {
    for (const reporter of made.splice(0)) reporter.stop();
  });
  return (options) => {
    const reporter = new InstanceReporter(options);
    made.push(reporter);
    return reporter;
  };
}
