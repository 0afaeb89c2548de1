/** Bytes in one WebAssembly page. */
export const PAGE = 65_536;

/**
 * Rewrites the memory section of a core WebAssembly module so that every
 * memory it defines has a maximum of at most `maxBytes`; `memory.grow` past it
 * then fails inside the guest instead of taking the sandbox's memory. Returns
 * the module unchanged when it defines no memory, and throws a RangeError
 * naming the need when a memory's initial size is already larger than the cap.
 */
export function limitMemory(module: Uint8Array<ArrayBuffer>, maxBytes: number): Uint8Array<ArrayBuffer> {
  const cap = Math.floor(maxBytes / PAGE);
  let at = 8;
  while (at < module.byteLength) {
    const id = module[at];
    const size = readLeb(module, at + 1);
    const start = size.next;
    const end = start + size.value;
    if (id === 5) {
      const section = rewriteMemories(module.subarray(start, end), cap);
      const header = [5, ...writeLeb(section.byteLength)];
      const patched = new Uint8Array(at + header.length + section.byteLength + module.byteLength - end);
      patched.set(module.subarray(0, at));
      patched.set(header, at);
      patched.set(section, at + header.length);
      patched.set(module.subarray(end), at + header.length + section.byteLength);
      return patched;
    }
    at = end;
  }
  return module;
}

function rewriteMemories(section: Uint8Array, cap: number): Uint8Array {
  const count = readLeb(section, 0);
  const out = [...writeLeb(count.value)];
  let at = count.next;
  for (let i = 0; i < count.value; i++) {
    const flags = section[at];
    const min = readLeb(section, at + 1);
    at = min.next;
    let max = Infinity;
    if (flags & 1) {
      const declared = readLeb(section, at);
      max = declared.value;
      at = declared.next;
    }
    if (min.value > cap) {
      throw new RangeError(
        `a memory of the Component starts at ${min.value * PAGE} bytes, more than the sandbox's ${cap * PAGE}`,
      );
    }
    out.push(flags | 1, ...writeLeb(min.value), ...writeLeb(Math.min(max, cap)));
  }
  return new Uint8Array(out);
}

function readLeb(bytes: Uint8Array, at: number): { value: number; next: number } {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * scale;
    scale *= 128;
    if ((byte & 0x80) === 0) return { value, next: at };
  }
}

function writeLeb(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return out;
}
