import { Brain, serveBrain } from "../../mod.ts";
import { brainSuite } from "./brain_suite.ts";

brainSuite("remote Brain", () => {
  const server = serveBrain();
  return Promise.resolve({ brain: new Brain({ url: server.url, token: "suite-token" }), dispose: server.shutdown });
});
