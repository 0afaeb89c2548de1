import { Component } from "../component/component.ts";
import { BrainError } from "../outcome/errors.ts";
import type { WireUpload } from "./protocol.ts";
import { contentHash } from "../util/content_hash.ts";

/** The bytes of one Component as a client sends them: its URL, content hash and base64 bytes. */
export interface ComponentBytes {
  /** The URL that names the Component. */
  url: string;
  /** Hex SHA-256 of its bytes. */
  sha256: string;
  /** Its bytes, base64. */
  bytes: string;
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
    if (upload.bytes === undefined) {
      this.#checkRoom();
      throw new BrainError("protocol_error", `tool ${upload.tool}: Component ${upload.sha256} was never uploaded`);
    }
    return await this.add({ url: upload.url, sha256: upload.sha256, bytes: upload.bytes }, `tool ${upload.tool}`);
  }

  /** Keeps a Component's bytes, checked against its hash, under that hash; `what` names it in errors. */
  async add({ url, sha256, bytes: base64 }: ComponentBytes, what = `Component ${sha256}`): Promise<Component> {
    const known = this.#byHash.get(sha256);
    if (known) return known;
    this.#checkRoom();
    let bytes: Uint8Array<ArrayBuffer>;
    try {
      bytes = Uint8Array.fromBase64(base64);
    } catch {
      throw new BrainError("protocol_error", `${what}: the uploaded Component is not base64`);
    }
    if (await contentHash(bytes) !== sha256) {
      throw new BrainError("protocol_error", `${what}: the uploaded bytes do not hash to ${sha256}`);
    }
    if (!URL.canParse(url)) throw new BrainError("protocol_error", `${what}: bad Component URL`);
    const kept = this.#byHash.get(sha256);
    if (kept) return kept;
    // Again after the await: distinct uploads checked at once cannot all pass the check made before it.
    this.#checkRoom();
    const component = new Component(new URL(url), {}, bytes);
    this.#byHash.set(sha256, component);
    return component;
  }

  #checkRoom(): void {
    if (this.#byHash.size < this.#max) return;
    throw new BrainError("limit_exceeded", `this host already uploaded ${this.#max} distinct Components`, {
      details: { limit: "maxUploadsPerHost", value: this.#max },
    });
  }
}
