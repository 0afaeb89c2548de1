import { Brain, serveBrain } from "../../mod.ts";
import { brainSuite } from "./brain_suite.ts";

brainSuite("remote Brain", async () => {
  const server = await serveBrain();
  return { brain: new Brain({ url: server.url, token: "suite-token" }), dispose: server.shutdown };
});
