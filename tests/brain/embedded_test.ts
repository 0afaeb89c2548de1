import { Brain } from "../../mod.ts";
import { brainSuite } from "./brain_suite.ts";
import { placementSuite, suiteModels } from "./placement_suite.ts";

brainSuite("embedded Brain", () => Promise.resolve({ brain: new Brain(), dispose: () => Promise.resolve() }));

placementSuite(
  "embedded Brain",
  (allow) => Promise.resolve({ brain: new Brain({ allow, models: suiteModels }), dispose: () => Promise.resolve() }),
);
