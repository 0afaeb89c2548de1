/**
 * Waits for `work` to settle, but no longer than `ms`: true if it settled in
 * time, false if it is still running (a store that stopped answering). Never rejects.
 */
export function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    work.then(() => true, () => true).then((settled) => {
      clearTimeout(timer);
      resolve(settled);
    });
  });
}
