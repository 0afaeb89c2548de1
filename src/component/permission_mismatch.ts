const KEYS = { read: "path", write: "path", net: "host", env: "variable", run: "command", ffi: "path", sys: "kind" };

/**
 * Run inside a sandbox: says which part of `expected` the process's actual
 * permissions differ from, or undefined when they match. A sandbox holding
 * more than its grant fails here, before any guest code.
 */
export function permissionMismatch(expected: Deno.PermissionOptionsObject): string | undefined {
  for (const [name, key] of Object.entries(KEYS) as [keyof typeof KEYS, string][]) {
    const want = expected[name];
    const state = (extra: Record<string, string> = {}) =>
      Deno.permissions.querySync({ name, ...extra } as Deno.PermissionDescriptor).state;
    if (Array.isArray(want)) {
      for (const entry of want) {
        if (state({ [key]: String(entry) }) !== "granted") return `${name} ${entry} is not granted`;
      }
      if (state() === "granted") return `${name} is granted beyond ${want.join(", ")}`;
      if (name === "read" || name === "write") {
        // An inherited path grant (say --allow-read=.) also covers the workspace's parent.
        for (const path of ["/", ...want.map((entry) => `${entry}/..`)]) {
          if (state({ path }) === "granted") return `${name} of ${path} is granted`;
        }
      }
    } else if (want !== true && state() === "granted") return `${name} is granted`;
  }
  return undefined;
}
