import { serveBrain, type ServedBrain } from "../../src/host/server/server.ts";

/** {@linkcode serveBrain} for one test: `await using` shuts the server down. */
export async function servedBrain(...args: Parameters<typeof serveBrain>): Promise<ServedBrain & AsyncDisposable> {
  const server = await serveBrain(...args);
  return Object.assign(server, { [Symbol.asyncDispose]: () => server.shutdown() });
}
