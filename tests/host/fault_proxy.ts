/**
 * A TCP proxy on 127.0.0.1 between a host client and its Brain server that
 * injects link faults: `cut` closes every open link, `tear` forwards half of the
 * next chunk the server sends and then closes that link (a torn frame), `delay`
 * holds every chunk for some milliseconds, and `blackhole` stops forwarding on
 * every link, open or new, without closing anything, until `heal`; `refuse`
 * closes every new link at once (a server that is down), until `heal`.
 * `trap` acts on the first chunk the server sends that holds a given text:
 * it drops the chunk and cuts the link, or forwards half of it (or none) and
 * then silences that link in both directions without closing it, or drops that
 * chunk alone.
 */
export interface FaultProxy {
  /** The base URL a client connects to instead of the server's. */
  readonly url: string;
  /** Links opened so far. */
  readonly links: number;
  cut(): void;
  tear(): void;
  delay(ms: number): void;
  blackhole(): void;
  refuse(): void;
  /**
   * On the next chunk from the server holding `text`: `cut` drops it and closes the link, `stall` drops it and
   * forwards nothing more either way, `half` forwards its first half and then nothing more, `drop` drops it alone
   * (the answer is lost, what follows still arrives). Resolves once it acted.
   */
  trap(text: string, how: "cut" | "stall" | "half" | "drop"): Promise<void>;
  /** Forwards normally again; links that were blackholed stay silent until an end drops them. */
  heal(): void;
  close(): Promise<void>;
}

interface Link {
  client: Deno.Conn;
  server: Deno.Conn;
  silent: boolean;
  close(): void;
}

/** Starts a proxy to the server at `target` (an `http://127.0.0.1:PORT` URL). */
export function faultProxy(target: string): FaultProxy {
  const port = Number(new URL(target).port);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const links = new Set<Link>();
  const pumps: Promise<void>[] = [];
  let opened = 0;
  let delayMs = 0;
  let blackholed = false;
  let tearNext = false;
  let refusing = false;
  const traps: { text: string; how: "cut" | "stall" | "half" | "drop"; sprung: () => void }[] = [];
  const decoder = new TextDecoder();

  const pump = async (link: Link, from: Deno.Conn, to: Deno.Conn, fromServer: boolean) => {
    const buffer = new Uint8Array(64 * 1024);
    let tail = Promise.resolve();
    try {
      while (true) {
        const read = await from.read(buffer);
        if (read === null) break;
        if (link.silent) continue;
        let chunk = buffer.slice(0, read);
        const trap = fromServer && traps.length > 0
          ? traps.find(({ text }) => decoder.decode(chunk).includes(text))
          : undefined;
        if (trap) {
          traps.splice(traps.indexOf(trap), 1);
          if (trap.how === "half") await writeAll(to, chunk.slice(0, Math.floor(chunk.length / 2)));
          if (trap.how === "cut") link.close();
          else if (trap.how !== "drop") link.silent = true;
          trap.sprung();
          if (trap.how === "cut") break;
          continue;
        }
        if (fromServer && tearNext && chunk.length > 1) {
          tearNext = false;
          chunk = chunk.slice(0, Math.floor(chunk.length / 2));
          await writeAll(to, chunk);
          link.close();
          break;
        }
        const wait = delayMs;
        tail = tail.then(async () => {
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          if (!link.silent) await writeAll(to, chunk);
        });
        await tail;
      }
    } catch {
      // The link was closed under us.
    }
    if (!link.silent) link.close();
  };

  const accepting = (async () => {
    for await (const client of listener) {
      opened++;
      if (refusing) {
        client.close();
        continue;
      }
      let server: Deno.Conn;
      try {
        server = await Deno.connect({ hostname: "127.0.0.1", port });
      } catch {
        client.close();
        continue;
      }
      let closed = false;
      const link: Link = {
        client,
        server,
        silent: blackholed,
        close() {
          if (closed) return;
          closed = true;
          links.delete(link);
          for (const conn of [client, server]) {
            try {
              conn.close();
            } catch {
              // Already closed.
            }
          }
        },
      };
      links.add(link);
      pumps.push(pump(link, client, server, false), pump(link, server, client, true));
    }
  })();

  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    get links() {
      return opened;
    },
    cut: () => [...links].forEach((link) => link.close()),
    tear: () => void (tearNext = true),
    delay: (ms) => void (delayMs = ms),
    blackhole() {
      blackholed = true;
      for (const link of links) link.silent = true;
    },
    refuse: () => void (refusing = true),
    trap(text, how) {
      const sprung = Promise.withResolvers<void>();
      traps.push({ text, how, sprung: sprung.resolve });
      return sprung.promise;
    },
    heal() {
      blackholed = false;
      refusing = false;
      delayMs = 0;
      tearNext = false;
    },
    async close() {
      listener.close();
      for (const link of links) link.close();
      await accepting.catch(() => {});
      await Promise.allSettled(pumps);
    },
  };
}

async function writeAll(conn: Deno.Conn, chunk: Uint8Array): Promise<void> {
  let written = 0;
  while (written < chunk.length) written += await conn.write(chunk.subarray(written));
}
