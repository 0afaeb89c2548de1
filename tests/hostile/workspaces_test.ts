import assert from "node:assert/strict";
import { Brain, BrainError } from "../../mod.ts";
import { probeTool, reader } from "../_support/components.ts";
import { scratchDir } from "../_support/scratch.ts";

const dir = scratchDir("hostile_workspaces");

Deno.test("hostile workspace roots: NUL is invalid_argument; a root that is a file, below a file or too long is setup_failed, no session kept", async () => {
  await Deno.writeTextFile(`${dir}/a_file`, "");
  const roots: [string, string, string][] = [
    ["NUL", `${dir}/ws\0x`, "invalid_argument"],
    ["a lone surrogate", `${dir}/ws\ud800`, "invalid_argument"],
    ["a file", `${dir}/a_file`, "setup_failed"],
    ["below a file", `${dir}/a_file/sub`, "setup_failed"],
    ["a name too long for the file system", `${dir}/${"d".repeat(300)}`, "setup_failed"],
  ];
  const codes = [];
  for (const [what, root] of roots) {
    const brain = (() => {
      try {
        return new Brain({ allow: { workspaceRoot: root, filesystem: ["read"] } });
      } catch (error) {
        return error;
      }
    })();
    if (!(brain instanceof Brain)) {
      codes.push(`${what}: ${brain instanceof BrainError ? brain.code : `a bare ${brain}`}`);
      continue;
    }
    await using _ = brain;
    const created = await brain.sessions.create({ tools: [probeTool("echo")({ env: reader })] })
      .then(() => "created", (error) => error instanceof BrainError ? error.code : `a bare ${error}`);
    codes.push(`${what}: ${created}`);
    assert.deepEqual(await brain.sessions.list(), [], `${what}: a session was kept`);
  }
  assert.deepEqual(codes, roots.map(([what, , code]) => `${what}: ${code}`));
});
