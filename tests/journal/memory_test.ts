import { MemoryJournal } from "../../src/journal/memory.ts";
import { journalSuite } from "./journal_suite.ts";

journalSuite("MemoryJournal", () => Promise.resolve(new MemoryJournal()));
