import { Brain } from "../../mod.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { brainSuite } from "./brain_suite.ts";
import { placementSuite, suiteModels } from "./placement_suite.ts";

brainSuite("remote Brain", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  return {
    brain: new Brain({ url: server.url, serverToken: "operator-secret", token: "suite-token" }),
    dispose: server.shutdown,
  };
});

placementSuite("remote Brain", async (allow) => {
  const server = await serveBrain({ serverToken: "operator-secret", models: suiteModels });
  return {
    brain: new Brain({ url: server.url, serverToken: "operator-secret", token: "placement-token", allow }),
    dispose: server.shutdown,
  };
});
