import assert from "node:assert/strict";

// The layers of design.md, bottom to top: an import may point only at its own layer or a lower one.
const LAYERS: readonly (readonly string[])[] = [
  ["util", "outcome"],
  ["model"],
  ["journal"],
  ["telemetry"],
  ["contract"],
  ["tool"],
  ["run"],
  ["env"],
  ["component", "http", "extension", "session"],
  ["agentloop"],
  ["embedded"],
  ["viewer"],
  ["host"],
  ["brain"],
  ["manifest", "mcp"],
];
const SRC = new URL("../src/", import.meta.url);

async function sources(dir: URL, into: string[] = []): Promise<string[]> {
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) await sources(url, into);
    else if (entry.name.endsWith(".ts")) into.push(url.href);
  }
  return into;
}

async function importGraph(): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  for (const file of await sources(SRC)) {
    const text = (await Deno.readTextFile(new URL(file))).replace(/\/\*[\s\S]*?\*\//g, "");
    const targets = [...text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+\.ts)"/g)]
      .map(([, specifier]) => new URL(specifier, file).href);
    graph.set(file, targets);
  }
  return graph;
}

const folder = (href: string) => href.slice(SRC.href.length).split("/")[0];
const layer = (href: string) => LAYERS.findIndex((names) => names.includes(folder(href)));
const short = (href: string) => href.slice(SRC.href.length);

Deno.test("every src folder has a layer", async () => {
  const unplaced = [...new Set((await sources(SRC)).map(folder))].filter((name) => layer(SRC.href + name) < 0);
  assert.deepEqual(unplaced, []);
});

Deno.test("imports in src/ only point down the layers", async () => {
  const upward: string[] = [];
  for (const [file, targets] of await importGraph()) {
    for (const target of targets) if (layer(target) > layer(file)) upward.push(`${short(file)} -> ${short(target)}`);
  }
  assert.deepEqual(upward, []);
});

Deno.test("the import graph of src/ has no circles", async () => {
  const graph = await importGraph();
  const state = new Map<string, "open" | "done">();
  const circles: string[] = [];
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === "done") return;
    if (state.get(file) === "open") {
      circles.push([...path.slice(path.indexOf(file)), file].map(short).join(" -> "));
      return;
    }
    state.set(file, "open");
    for (const target of graph.get(file) ?? []) visit(target, [...path, file]);
    state.set(file, "done");
  };
  for (const file of graph.keys()) visit(file, []);
  assert.deepEqual(circles, []);
});
