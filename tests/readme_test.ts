import assert from "node:assert/strict";
import { scratchDir } from "./_support/scratch.ts";
import { runDeno } from "./_support/spawn_deno.ts";

/**
 * Every TypeScript code block of the README, checked the way a newcomer uses it: in a
 * fresh app folder whose deno.json holds only the import map `deno add
 * jsr:@aexhq/brain` and `deno add npm:zod@4` would write (pointing at this
 * checkout, since JSR is not reachable here) and no `unstable` setting. A block
 * whose first line is `// name.ts` is saved under that name, so later blocks
 * can import it. Every block is type-checked; a block followed by a shell
 * code block whose first line is `deno run ... name.ts` is also run with exactly
 * that command, so the README's flags are the flags it needs.
 */

const root = new URL("../", import.meta.url);
const readme = await Deno.readTextFile(new URL("README.md", root));
const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", root)));

interface Block {
  file: string;
  code: string;
  line: number;
  run?: string[];
  /** The `deno cache` commands of the shell block before `run`, run first. */
  prepare?: string[][];
}

function blocks(markdown: string): Block[] {
  const fences = [...markdown.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```$/gm)];
  const found: Block[] = [];
  for (const [index, fence] of fences.entries()) {
    if (fence[1] !== "ts") continue;
    const code = fence[2];
    const line = markdown.slice(0, fence.index).split("\n").length;
    const file = /^\/\/ ([\w.-]+\.ts)\n/.exec(code)?.[1] ?? `block_${line}.ts`;
    const next = fences[index + 1];
    const commands = next?.[1] === "sh"
      ? next[2].split("\n").map((command) => command.replace(/\s+#.*$/, "").trim().split(/\s+/))
      : [];
    const ran = commands.findIndex((words) => words[0] === "deno" && words[1] === "run" && words.at(-1) === file);
    const run = ran >= 0 ? commands[ran].slice(1) : undefined;
    const prepare = commands.slice(0, Math.max(ran, 0)).filter((words) => words[0] === "deno" && words[1] === "cache")
      .map((words) => words.slice(1));
    found.push({ file, code, line, ...(run ? { run } : {}), ...(prepare.length ? { prepare } : {}) });
  }
  return found;
}

/** A fresh app folder: the README's blocks, and a deno.json that maps the package and its dependencies only. */
async function freshApp(all: Block[]): Promise<string> {
  const dir = scratchDir("readme");
  const imports: Record<string, string> = { ...config.imports };
  for (const [path, target] of Object.entries(config.exports as Record<string, string>)) {
    imports[`@aexhq/brain${path.slice(1)}`] = new URL(target, root).href;
  }
  await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify({ imports }, null, 2));
  for (const block of all) await Deno.writeTextFile(`${dir}/${block.file}`, block.code);
  return await Deno.realPath(dir);
}

const all = blocks(readme);

Deno.test("the README has runnable blocks, each file named once", () => {
  assert.ok(all.length >= 5, `only ${all.length} ts blocks`);
  assert.ok(all.filter((block) => block.run).length >= 3, "too few blocks are run");
  const names = all.map((block) => block.file);
  assert.deepEqual(names.filter((name, index) => names.indexOf(name) !== index), [], "a file name is used twice");
});

Deno.test("every README ts block type-checks in a fresh app, and every block with a deno run command runs", async () => {
  const dir = await freshApp(all);
  const check = await runDeno(["check", "--no-lock", ...all.map((block) => block.file)], {
    cwd: dir,
    signal: AbortSignal.timeout(180_000),
  });
  assert.ok(check.success, `README blocks do not type-check:\n${new TextDecoder().decode(check.stderr)}`);
  for (const block of all.filter((block) => block.run)) {
    for (const command of block.prepare ?? []) {
      const prepared = await runDeno([command[0], "--no-lock", ...command.slice(1)], { cwd: dir });
      assert.ok(prepared.success, `README line ${block.line}: deno ${command.join(" ")} failed`);
    }
    const run = await runDeno([block.run![0], "--no-lock", ...block.run!.slice(1)], { cwd: dir });
    const output = new TextDecoder().decode(run.stderr) + new TextDecoder().decode(run.stdout);
    assert.ok(run.success, `README line ${block.line}: deno ${block.run!.join(" ")} failed:\n${output}`);
  }
});

Deno.test("the README's Component block runs with the command its prose gives, with inspect.wasm next to it", async () => {
  const block = all.find((block) => block.file === "component.ts");
  assert.ok(block, "the README has a component.ts block");
  const command = /With `inspect\.wasm` next to it: `deno (run [^`]*component\.ts)`/.exec(readme)?.[1].split(/\s+/);
  assert.ok(command, "the README says how to run component.ts");
  const dir = await freshApp(all);
  await Deno.copyFile(new URL("examples/inspect/inspect.wasm", root), `${dir}/inspect.wasm`);
  const run = await runDeno([command[0], "--no-lock", ...command.slice(1)], { cwd: dir });
  const output = new TextDecoder().decode(run.stderr) + new TextDecoder().decode(run.stdout);
  assert.ok(run.success, `deno ${command.join(" ")} failed:\n${output}`);
  assert.match(new TextDecoder().decode(run.stdout), /status: "ok"/);
});
