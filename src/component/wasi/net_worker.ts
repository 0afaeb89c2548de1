/**
 * The body of the Worker that does a sandbox's network I/O: Deno's network APIs
 * are asynchronous and a guest's WASI calls are not, so the sandbox's thread
 * asks this Worker and blocks until it answers ({@linkcode BlockingNet}).
 * Its source is sent to the Worker as text: it imports nothing statically and
 * uses no outer name. The Worker holds the sandbox's own Deno permissions (its
 * `--allow-net` is exactly the grant); the allow-list is checked before a
 * request reaches it.
 *
 * Every pending thing (a response, a connection, a lookup, a body being read, a
 * socket being written) is an item with an id and a readiness the sandbox can
 * wait on.
 *
 * @module
 */

/** The failure kinds the Worker reports; the WASI shims map them to their error codes. */
export type NetFailure = "denied" | "refused" | "reset" | "timeout" | "dns" | "closed" | "other";

/** Runs inside the Worker: answers `{ id, op, ... }` requests on the port it is given. */
export function netWorkerMain(): void {
  const READ_AHEAD = 65_536;
  type Settled = { ok?: unknown; err?: { kind: string; message: string } };
  type Item = {
    ready(): boolean;
    settled?: Settled;
    chunks?: Uint8Array[];
    size?: number;
    done?: boolean;
    error?: { kind: string; message: string };
    reader?: ReadableStreamDefaultReader<Uint8Array>;
    pulling?: boolean;
    writer?: WritableStreamDefaultWriter<Uint8Array>;
    queued?: number;
    close?: () => void;
  };
  const items = new Map<number, Item>();
  let nextId = 1;
  let waiting: { keys: number[]; answer: () => void } | undefined;

  const failure = (error: unknown): { kind: string; message: string } => {
    const text = `${(error as Error)?.name}: ${(error as Error)?.message} ${(error as { cause?: Error })?.cause ?? ""}`;
    const kind = /NotCapable|PermissionDenied|Requires net access|EPERM/i.test(text)
      ? "denied"
      : /refused/i.test(text)
      ? "refused"
      : /reset|broken pipe/i.test(text)
      ? "reset"
      : /TimeoutError|timed out/i.test(text)
      ? "timeout"
      : /dns|ENOTFOUND|EAI_|lookup|name or service/i.test(text)
      ? "dns"
      : "other";
    return { kind, message: text.slice(0, 500) };
  };
  const changed = () => {
    if (waiting && waiting.keys.some((key) => items.get(key)?.ready() ?? true)) waiting.answer();
  };
  const add = (item: Item): number => {
    const id = nextId++;
    items.set(id, item);
    return id;
  };
  const future = (work: Promise<unknown>): number => {
    const item: Item = { ready: () => item.settled !== undefined };
    work.then((ok) => (item.settled = { ok }), (error) => (item.settled = { err: failure(error) })).finally(changed);
    return add(item);
  };
  const readable = (stream: ReadableStream<Uint8Array> | null, close?: () => void): number => {
    const item: Item = {
      chunks: [],
      size: 0,
      done: stream === null,
      reader: stream?.getReader(),
      close,
      ready: () => {
        pull(item);
        return item.size! > 0 || item.done! || item.error !== undefined;
      },
    };
    pull(item);
    return add(item);
  };
  const pull = (item: Item) => {
    if (item.pulling || item.done || item.error || !item.reader || item.size! >= READ_AHEAD) return;
    item.pulling = true;
    item.reader.read().then(({ done, value }) => {
      item.pulling = false;
      if (done) item.done = true;
      else {
        item.chunks!.push(value);
        item.size! += value.byteLength;
        pull(item);
      }
    }, (error) => {
      item.pulling = false;
      item.error = failure(error);
    }).finally(changed);
  };
  const writable = (stream: WritableStream<Uint8Array>, close?: () => void): number => {
    const item: Item = {
      writer: stream.getWriter(),
      queued: 0,
      close,
      ready: () => item.queued === 0 || item.error !== undefined,
    };
    return add(item);
  };
  const take = (item: Item, max: number) => {
    if (item.size! > 0) {
      const out = new Uint8Array(Math.min(max, item.size!));
      let at = 0;
      while (at < out.byteLength) {
        const chunk = item.chunks![0];
        const part = chunk.subarray(0, out.byteLength - at);
        out.set(part, at);
        at += part.byteLength;
        if (part.byteLength === chunk.byteLength) item.chunks!.shift();
        else item.chunks![0] = chunk.subarray(part.byteLength);
      }
      item.size! -= out.byteLength;
      pull(item);
      return { bytes: out };
    }
    if (item.error) return { error: item.error };
    if (item.done) return { end: true };
    pull(item);
    return { bytes: new Uint8Array(0) };
  };
  const drop = (id: number) => {
    const item = items.get(id);
    items.delete(id);
    item?.reader?.cancel().catch(() => {});
    item?.writer?.abort().catch(() => {});
    try {
      item?.close?.();
    } catch {
      // Already closed.
    }
  };

  type Request = { number: number; op: string; [key: string]: unknown };
  // deno-lint-ignore no-explicit-any
  const ops: Record<string, (request: any, answer: (value: unknown) => void) => void> = {
    fetch({ url, method, headers, body, stream, timeoutMs }, answer) {
      const sink = stream ? new TransformStream<Uint8Array, Uint8Array>() : undefined;
      const signal = timeoutMs ? AbortSignal.timeout(timeoutMs) : undefined;
      const response = fetch(url, {
        method,
        headers,
        body: sink ? sink.readable : body,
        redirect: "manual",
        signal,
        ...(sink ? { duplex: "half" } : {}),
      }).then((response) => ({
        status: response.status,
        headers: [...response.headers],
        body: readable(response.body),
      }));
      answer({ future: future(response), sink: sink ? writable(sink.writable) : undefined });
    },
    connect({ hostname, port }, answer) {
      const connected = Deno.connect({ hostname, port }).then((conn) => {
        const close = () => conn.close();
        return {
          input: readable(conn.readable, close),
          output: writable(conn.writable),
          local: conn.localAddr,
          remote: conn.remoteAddr,
          conn: add({ ready: () => true, close }),
        };
      });
      answer({ future: future(connected) });
    },
    resolve({ name }, answer) {
      // The system resolver, checked against the sandbox's --allow-net by name (Deno.resolveDns
      // would need the nameserver's address granted instead).
      const found = import("node:dns/promises").then((dns) => dns.lookup(name, { all: true }))
        .then((addresses) => addresses.map(({ address }) => address));
      answer({ future: future(found) });
    },
    room({ key }, answer) {
      const item = items.get(key);
      answer(item?.error ? { error: item.error } : { queued: item?.queued ?? 0 });
    },
    settled({ key }, answer) {
      answer(items.get(key)?.settled);
    },
    take({ key, max }, answer) {
      const item = items.get(key);
      answer(item ? take(item, max) : { end: true });
    },
    write({ key, bytes }, answer) {
      const item = items.get(key);
      if (!item?.writer || item.error) return answer({ error: item?.error ?? { kind: "closed", message: "closed" } });
      item.queued! += bytes.byteLength;
      item.writer.write(bytes).then(
        () => (item.queued! -= bytes.byteLength),
        (error) => (item.error = failure(error)),
      ).finally(changed);
      answer({});
    },
    end({ key }, answer) {
      const item = items.get(key);
      item?.writer?.close().catch((error) => (item.error = failure(error))).finally(changed);
      answer({});
    },
    ready({ keys }, answer) {
      answer(keys.map((key: number) => items.get(key)?.ready() ?? true));
    },
    wait({ keys, timeoutMs }, answer) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        clearTimeout(timer);
        waiting = undefined;
        answer({});
      };
      waiting = { keys, answer: done };
      if (timeoutMs >= 0) timer = setTimeout(done, timeoutMs);
      changed();
    },
    drop({ keys }, answer) {
      for (const key of keys) drop(key);
      answer({});
    },
  };

  (self as unknown as Worker).onmessage = (event: MessageEvent) => {
    const { port, signal } = event.data as { port: MessagePort; signal: Int32Array };
    port.onmessage = ({ data }: MessageEvent<Request>) => {
      const answer = (value: unknown) => {
        port.postMessage(value);
        Atomics.store(signal, 0, data.number);
        Atomics.notify(signal, 0);
      };
      try {
        ops[data.op](data, answer);
      } catch (error) {
        // The sandbox's thread is blocked on this answer: a failure is an answer too.
        answer({ error: failure(error) });
      }
    };
  };
}
