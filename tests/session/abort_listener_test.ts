import assert from "node:assert/strict";
import { denoCommand } from "../_support/spawn_deno.ts";

for (const brain of ["embedded", "remote"]) {
  Deno.test(`${brain}: a Tool's abort listener that throws when its call is cancelled does not end the process; the error is logged`, async () => {
    const { success, stdout, stderr } = await denoCommand(
      [
        "run",
        "--quiet",
        "--allow-net=127.0.0.1",
        "--allow-env",
        "--allow-read=.",
        "tests/session/fixtures/throwing_abort_listener.ts",
        brain,
      ],
      { stdout: "piped", stderr: "piped" },
    ).output();
    const said = new TextDecoder().decode(stdout).trim().split("\n");
    const logged = new TextDecoder().decode(stderr);
    assert.deepEqual(said, ["ended cancelled", "next finish", "closed"], logged);
    assert.ok(success, logged);
    assert.match(logged, /the Tool's abort listener threw/);
    assert.match(logged, /the Tool's onabort threw/);
  });
}
