import { Pollable } from "./streams.ts";

const NS_PER_MS = 1_000_000;

/** `wasi:clocks` (monotonic and wall) and `wasi:random` (secure, insecure, seed) for a guest. */
export function clocksAndRandomImports(): Record<string, unknown> {
  const bytes = (length: bigint) => {
    const out = new Uint8Array(Number(length));
    for (let at = 0; at < out.byteLength; at += 65_536) crypto.getRandomValues(out.subarray(at, at + 65_536));
    return out;
  };
  const u64 = () => new BigUint64Array(crypto.getRandomValues(new BigUint64Array(1)).buffer)[0];
  const random = { getRandomBytes: bytes, getRandomU64: u64 };
  return {
    "wasi:clocks/monotonic-clock": {
      now: () => BigInt(Math.round(performance.now() * NS_PER_MS)),
      resolution: () => 1_000n,
      subscribeInstant: (when: bigint) => new Pollable(Number(when) / NS_PER_MS),
      subscribeDuration: (duration: bigint) => new Pollable(performance.now() + Number(duration) / NS_PER_MS),
    },
    "wasi:clocks/wall-clock": {
      now: () => {
        const ms = Date.now();
        return { seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: (ms % 1000) * NS_PER_MS };
      },
      resolution: () => ({ seconds: 0n, nanoseconds: NS_PER_MS }),
    },
    "wasi:random/random": random,
    "wasi:random/insecure": { getInsecureRandomBytes: bytes, getInsecureRandomU64: u64 },
    "wasi:random/insecure-seed": { insecureSeed: () => [u64(), u64()] },
  };
}
