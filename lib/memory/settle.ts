/**
 * The model's answer as a promise, as a Redis reply would come: run now (the model is synchronous),
 * a throw (an error reply) becoming a rejection.
 */
export function settle<T>(compute: () => T): Promise<T> {
  try {
    return Promise.resolve(compute());
  } catch (error) {
    return Promise.reject(error);
  }
}
