import { describeValue } from './value-checks';
import { redactUrl } from './redact';

/** Problems of a Redis URL given as `label`, checked before ioredis would quote it whole; never with its password. */
export function describeRedisUrlProblems(url: string, label: string): string[] {
  const shown = describeValue(redactUrl(url));
  if (!/^rediss?:\/\//i.test(url)) return [`${label} must be a redis:// or rediss:// URL, got ${shown}`];
  try {
    if (new URL(url).hostname.length > 0) return [];
  } catch {
    // falls through to the problem below
  }
  return [`${label} is not a valid URL (check the host, the port and how the password is written), got ${shown}`];
}
