/** Runs `fn` and returns its result as a promise, turning a throw into a rejection. */
export function promised<T>(fn: () => T | PromiseLike<T>): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}
