/** A gate a Tool (or any code under test) waits on until the test opens it. */
export function gate(): { wait: Promise<void>; open(): void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { wait: promise, open: () => resolve() };
}
