/**
 * An async Zod check the test holds: `entered` once the first check runs,
 * `passed` as it lets its value through after `open()`. Later checks (a remote
 * Brain checks a value on both sides) pass at once.
 */
export function heldCheck(): {
  check: () => Promise<boolean>;
  entered: Promise<void>;
  passed: Promise<void>;
  open(): void;
} {
  const entered = Promise.withResolvers<void>();
  const opened = Promise.withResolvers<void>();
  const passed = Promise.withResolvers<void>();
  let checks = 0;
  return {
    check: async () => {
      if (checks++ > 0) return true;
      entered.resolve();
      await opened.promise;
      passed.resolve();
      return true;
    },
    entered: entered.promise,
    passed: passed.promise,
    open: () => opened.resolve(),
  };
}
