import type { Journal } from "./journal.ts";
import { allKeys } from "../outcome/known_keys.ts";

/** The journals Brain's own stores made of their own class: not a subclass, copy or Proxy of one. */
const builtIn = new WeakSet<object>();

/** Every method of a {@linkcode Journal}. */
export const JOURNAL_METHODS: readonly string[] = allKeys<Journal>({
  append: true,
  acquire: true,
  renew: true,
  release: true,
  holder: true,
  stranded: true,
  beat: true,
  nodes: true,
  read: true,
  head: true,
  openCalls: true,
  subscribe: true,
  createSession: true,
  updateSession: true,
  getSession: true,
  listSessions: true,
  deleteSession: true,
  close: true,
});

/**
 * Marks `journal` as one of Brain's stores when its constructor is `store`
 * itself (`new.target`): an application's subclass overrides what it likes,
 * and is checked like any other application journal.
 */
export function markBuiltIn(journal: Journal, made: unknown, store: unknown): void {
  if (made === store) builtIn.add(journal);
}

/**
 * True for a journal Brain's own store made and nothing replaced a method of
 * (an own property set on the instance): its answers need no checking.
 */
export function isBuiltIn(journal: Journal): boolean {
  return builtIn.has(journal) && !JOURNAL_METHODS.some((name) => Object.hasOwn(journal, name));
}
