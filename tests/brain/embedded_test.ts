import { Brain } from "../../mod.ts";
import { brainSuite } from "./brain_suite.ts";

brainSuite("embedded Brain", () => Promise.resolve({ brain: new Brain(), dispose: () => Promise.resolve() }));
