/** Default key prefix, the articles' `rl:` (the limiter adds it to every key). */
export const DEFAULT_KEY_PREFIX = 'rl:';
