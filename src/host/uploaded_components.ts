import { Component } from "../component/component.ts";
import { BrainError } from "../outcome/errors.ts";
import type { WireUpload } from "./protocol.ts";

/** Hex SHA-256 of `bytes`, the content address of an uploaded Component. */
export async function contentHash(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toHex();
}

/**
 * The Components one host has uploaded, by content hash. Each is one
 * {@linkcode Component} object, so its admission is cached across the host's
 * sessions and a client sends only the bytes this server lacks.
 */
export class UploadedComponents {
  #byHash = new Map<string, Component>();
  #max: number;

  /** Keeps at most `max` distinct Components; one more upload fails `limit_exceeded`. */
  constructor(max = Infinity) {
    this.#max = max;
  }

  /** The hashes among `hashes` whose bytes were never uploaded here. */
  lacking(hashes: readonly string[]): string[] {
    return hashes.filter((hash) => !this.#byHash.has(hash));
  }

  /** The Component an upload names: its bytes (checked against its hash) or an earlier upload's. */
  async component(upload: WireUpload): Promise<Component> {
    const known = this.#byHash.get(upload.sha256);
    if (known) return known;
    if (this.#byHash.size >= this.#max) {
      throw new BrainError("limit_exceeded", `this host already uploaded ${this.#max} distinct Components`, {
        details: { limit: "maxUploadsPerHost", value: this.#max },
      });
    }
    if (upload.bytes === undefined) {
      throw new BrainError("protocol_error", `tool ${upload.tool}: Component ${upload.sha256} was never uploaded`);
    }
    let bytes: Uint8Array<ArrayBuffer>;
    try {
      bytes = Uint8Array.fromBase64(upload.bytes);
    } catch {
      throw new BrainError("protocol_error", `tool ${upload.tool}: the uploaded Component is not base64`);
    }
    if (await contentHash(bytes) !== upload.sha256) {
      throw new BrainError("protocol_error", `tool ${upload.tool}: the uploaded bytes do not hash to ${upload.sha256}`);
    }
    if (!URL.canParse(upload.url)) throw new BrainError("protocol_error", `tool ${upload.tool}: bad Component URL`);
    const component = this.#byHash.get(upload.sha256) ?? new Component(new URL(upload.url), {}, bytes);
    this.#byHash.set(upload.sha256, component);
    return component;
  }
}
