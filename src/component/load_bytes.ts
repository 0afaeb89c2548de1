import { BrainError } from "../outcome/errors.ts";
import { readBoundedBytes } from "../util/read_bounded.ts";

/** Bounds on reading a Component's bytes. */
export interface LoadLimits {
  /** Largest Component accepted, in bytes. */
  maxBytes: number;
  /** How long an `http:`/`https:` fetch may take, headers and body together, in milliseconds. */
  timeoutMs: number;
}

/** Defaults for {@linkcode LoadLimits}: 64 MiB and 30 seconds. */
export const DEFAULT_LOAD_LIMITS: Readonly<LoadLimits> = Object.freeze({
  maxBytes: 64 * 1024 * 1024,
  timeoutMs: 30_000,
});

/**
 * Reads a Component's bytes from a `file:` URL or fetches them from an `http:`
 * or `https:` URL (a published factory's `import.meta.url`). Fails with
 * `invalid_tool` for an unreadable file or another scheme, `http_error` for a
 * failed request or a non-2xx answer (`details.status`), `payload_too_large`
 * past `maxBytes` (declared or streamed), and `timeout` past `timeoutMs`.
 */
export function loadComponentBytes(url: URL, limits: LoadLimits = DEFAULT_LOAD_LIMITS): Promise<Uint8Array> {
  if (url.protocol === "file:") return readFile(url, limits.maxBytes);
  if (url.protocol === "http:" || url.protocol === "https:") return fetchBytes(url, limits);
  return Promise.reject(
    new BrainError("invalid_tool", `cannot load the Component ${url.href}: only file:, http: and https: URLs load`),
  );
}

async function readFile(url: URL, maxBytes: number): Promise<Uint8Array> {
  try {
    // Only a regular file: a device such as /dev/zero or a FIFO would be read forever.
    const { size, isFile } = await Deno.stat(url);
    if (!isFile) throw new BrainError("invalid_tool", `cannot read the Component ${url.href}: not a regular file`);
    if (size > maxBytes) throw tooLarge(url, maxBytes);
    using file = await Deno.open(url);
    return await readBoundedBytes(file.readable, maxBytes, () => tooLarge(url, maxBytes));
  } catch (error) {
    if (error instanceof BrainError) throw error;
    throw new BrainError("invalid_tool", `cannot read the Component ${url.href}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

async function fetchBytes(url: URL, { maxBytes, timeoutMs }: LoadLimits): Promise<Uint8Array> {
  const signal = AbortSignal.timeout(timeoutMs);
  const failed = (error: unknown) => {
    if (error instanceof BrainError) return error;
    if (signal.aborted) {
      return new BrainError("timeout", `fetching the Component ${url.href} took longer than ${timeoutMs} ms`, {
        details: { url: url.href, timeoutMs },
      });
    }
    return new BrainError("http_error", `fetching the Component ${url.href} failed: ${(error as Error).message}`, {
      details: { url: url.href },
      cause: error,
    });
  };
  let response: Response;
  try {
    response = await fetch(url, { signal });
  } catch (error) {
    throw failed(error);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new BrainError("http_error", `fetching the Component ${url.href} answered ${response.status}`, {
      details: { url: url.href, status: response.status },
    });
  }
  if (Number(response.headers.get("content-length")) > maxBytes) {
    await response.body?.cancel();
    throw tooLarge(url, maxBytes);
  }
  try {
    return await readBoundedBytes(response.body, maxBytes, () => tooLarge(url, maxBytes));
  } catch (error) {
    throw failed(error);
  }
}

function tooLarge(url: URL, maxBytes: number): BrainError {
  return new BrainError("payload_too_large", `the Component ${url.href} is larger than ${maxBytes} bytes`, {
    details: { url: url.href, maxBytes },
  });
}
