/**
 * Returns `promise` marked as handled: awaiting it still rejects, but a caller
 * that never awaits it does not get an unhandled rejection, which would end the
 * whole application.
 */
export function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(ignore);
  return promise;
}

function ignore(): void {}
