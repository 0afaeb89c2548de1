/**
 * `value` made disposable by its own `close()`, for things (journals, clients) that have no
 * `Symbol.asyncDispose` of their own.
 *
 * For example:
 *   await using journal = closing(await KvJournal.open(path));
 */
export function closing<T extends { close(): Promise<unknown> | unknown }>(value: T): T & AsyncDisposable {
  return Object.assign(value, { [Symbol.asyncDispose]: async () => void await value.close() });
}
