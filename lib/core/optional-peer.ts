import { RateLimitConfigError } from './errors/rate-limit-config.error';

/** Loads an optional peer dependency on first use; a missing one is a {@link RateLimitConfigError} with `problem`. */
export function loadOptionalPeer<T>(packageName: string, feature: string, problem: string): T {
  try {
    // Synchronous and lazy on purpose: a top-level import would load the package for every user,
    // and a dynamic import() would make the features that need it asynchronous.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(packageName) as T;
  } catch (error) {
    const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
    if (code === 'MODULE_NOT_FOUND' && String(message).includes(packageName)) {
      throw new RateLimitConfigError([problem], feature);
    }
    throw error;
  }
}
