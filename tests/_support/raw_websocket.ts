/**
 * A WebSocket client on a bare TCP connection, for hostile tests: it upgrades by hand and sends masked frames of any
 * opcode and size, and reads nothing after the upgrade's answer unless a test reads `connection` itself (a peer
 * that never reads). `using` closes the connection.
 *
 * For example:
 *   using socket = await rawWebSocket(server.url, "/v1/host?host=app", { authorization: "Bearer t" });
 *   await socket.send(JSON.stringify({ id: 1, op: "list" }));
 */
export async function rawWebSocket(url: string, path: string, headers: Record<string, string> = {}): Promise<
  Disposable & { connection: Deno.Conn; status: string; send(data: string | Uint8Array): Promise<void> }
> {
  const { hostname, port } = new URL(url);
  const connection = await Deno.connect({ hostname, port: Number(port) });
  const request = [
    `GET ${path} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    "Upgrade: websocket",
    "Connection: Upgrade",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version: 13",
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    "",
    "",
  ].join("\r\n");
  await writeAll(connection, new TextEncoder().encode(request));
  let head = "";
  const buffer = new Uint8Array(1);
  // One byte at a time, so nothing past the answer's head is read.
  while (!head.endsWith("\r\n\r\n")) {
    if (await connection.read(buffer) === null) break;
    head += String.fromCharCode(buffer[0]);
  }
  return {
    connection,
    status: head.split("\r\n")[0],
    send: (data) => writeAll(connection, maskedFrame(data)),
    [Symbol.dispose]: () => {
      try {
        connection.close();
      } catch {
        // Already closed by the server.
      }
    },
  };
}

/** One final client frame: text for a string, binary for bytes, masked as RFC 6455 requires. */
function maskedFrame(data: string | Uint8Array): Uint8Array {
  const payload = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const length = payload.length;
  const opcode = typeof data === "string" ? 1 : 2;
  const head = length < 126
    ? [0x80 | opcode, 0x80 | length]
    : length < 65_536
    ? [0x80 | opcode, 0x80 | 126, length >> 8, length & 255]
    : [0x80 | opcode, 0x80 | 127, 0, 0, 0, 0, length >>> 24, (length >>> 16) & 255, (length >>> 8) & 255, length & 255];
  const mask = [7, 21, 42, 99];
  const frame = new Uint8Array(head.length + 4 + length);
  frame.set(head);
  frame.set(mask, head.length);
  for (let index = 0; index < length; index++) frame[head.length + 4 + index] = payload[index] ^ mask[index & 3];
  return frame;
}

async function writeAll(connection: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let written = 0; written < bytes.length;) written += await connection.write(bytes.subarray(written));
}
