/** The synchronous model's answer as a promise, as a reply would come: a throw (an error reply) rejects. */
export function settle<T>(compute: () => T): Promise<T> {
  try {
    return Promise.resolve(compute());
  } catch (error) {
    return Promise.reject(error);
  }
}
