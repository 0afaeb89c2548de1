import { MemoryJournal } from "../../mod.ts";
import { journalSuite } from "./journal_suite.ts";

journalSuite("MemoryJournal", () => Promise.resolve(new MemoryJournal()));
