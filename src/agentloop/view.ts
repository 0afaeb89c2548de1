import type { ConversationRequest, JournalRecord } from "../journal/records.ts";
import type { ModelMessage, ModelToolSpec } from "../model/types.ts";
import type { JournaledRequest } from "../session/model_call.ts";
import { ConversationMessages, type ConversationRecord, isConversationRecord } from "./messages.ts";
import { presentFinish, presentResult } from "./present.ts";

type Of<K extends JournalRecord["kind"]> = Extract<JournalRecord, { kind: K }>;

/** What the loop knows about one Tool call it started. */
interface LoopCall {
  tool: string;
  results: Of<"tool_result">[];
  finished?: Of<"tool_call_finished">;
  /** Sequence through which the call's observations are in the conversation; 0 before its tool message. */
  presented: number;
  synchronous: PromiseWithResolvers<void>;
}

/** New observations of one call, formatted for the model, and the sequence they reach. */
export interface Observation {
  /** The Tool call's sequence. */
  call: number;
  /** The Tool name. */
  tool: string;
  /** Model-facing text, one line per observation. */
  content: string;
  /** The last sequence the text covers. */
  through: number;
}

/**
 * The Agentloop's cache of its session journal: the conversation records and
 * the Tool calls it started (linked by `toolCallId`). Records may arrive twice
 * or ahead of order; `contiguous` is the sequence up to which nothing is missing.
 */
export class LoopView {
  /** Sequences in the view above `contiguous`. */
  #ahead = new Set<number>();
  #calls = new Map<number, LoopCall>();
  #contiguous = 0;
  #lastUserMessage = 0;
  #conversation: ConversationRecord[] = [];
  #messages = new ConversationMessages();
  /** Answered calls that may still have observations to present. */
  #answered = new Set<number>();
  /** Conversation records no committed model request refers to yet. */
  #unsent: number[] = [];
  #previous: { sequence: number; system: string; toolsJson: string } | undefined;

  /** Every sequence up to this one is in the view. */
  get contiguous(): number {
    return this.#contiguous;
  }

  /** Adds committed records; already known sequences are ignored. */
  add(records: Iterable<JournalRecord>): void {
    for (const record of records) {
      if (record.sequence <= this.#contiguous || this.#ahead.has(record.sequence)) continue;
      if (record.sequence === this.#contiguous + 1) this.#contiguous++;
      else this.#ahead.add(record.sequence);
      if (isConversationRecord(record)) this.#addConversation(record);
      this.#index(record);
    }
    while (this.#ahead.delete(this.#contiguous + 1)) this.#contiguous++;
  }

  /** True when the loop started Tool call `call` (its `tool_call_started` carries a tool call id). */
  started(call: number): boolean {
    return this.#calls.has(call);
  }

  /** Resolves when the call's synchronous phase has ended: it returned or finished. */
  synchronous(call: number): Promise<void> {
    return this.#call(call).synchronous.promise;
  }

  /** The latest user message sequence, or 0. */
  get lastUserMessage(): number {
    return this.#lastUserMessage;
  }

  /** Everything known about call `call` so far, as the text of its tool message. */
  answer(call: number): { content: string; through: number } {
    const state = this.#call(call);
    const lines = this.#lines(state, 0);
    const through = this.#contiguous;
    if (lines.length > 0) return { content: lines.join("\n"), through };
    return {
      content: state.finished
        ? "The tool finished without a result."
        : "The tool is still running in the background; its results will arrive later.",
      through,
    };
  }

  /** Model-facing observations of answered calls that the conversation does not have yet. */
  observations(): Observation[] {
    const found: Observation[] = [];
    for (const call of this.#answered) {
      const state = this.#calls.get(call)!;
      if (state.finished && state.presented >= state.finished.sequence) {
        // Presented through its end: nothing more to observe, nothing more to keep.
        this.#answered.delete(call);
        this.#calls.delete(call);
        continue;
      }
      const lines = this.#lines(state, state.presented);
      if (lines.length === 0) continue;
      found.push({
        call,
        tool: state.tool,
        content: lines.map((line) => `Tool ${state.tool} (call ${call}): ${line}`).join("\n"),
        through: this.#contiguous,
      });
    }
    return found.sort((a, b) => a.call - b.call);
  }

  /**
   * The conversation as model messages. Tool messages follow their assistant
   * message; a tool call left without one gets a placeholder answer.
   */
  messages(): ModelMessage[] {
    return this.#messages.snapshot();
  }

  /**
   * The next model request, and how the journal keeps it: the conversation
   * records added since the previous request that committed, and the system
   * prompt and tools only when they changed. Call `started` with the sequence
   * of its committed `model_call_started` record.
   */
  nextRequest(system: string, tools: ModelToolSpec[]): JournaledRequest {
    const previous = this.#previous;
    const toolsJson = JSON.stringify(tools);
    const unsent = this.#unsent.length;
    const conversation: ConversationRequest = { messages: this.#unsent.slice() };
    if (previous) conversation.previous = previous.sequence;
    if (previous?.system !== system) conversation.system = system;
    if (previous?.toolsJson !== toolsJson) conversation.tools = tools;
    return {
      request: { system, messages: this.messages(), tools },
      conversation,
      started: (sequence) => {
        this.#unsent.splice(0, unsent);
        this.#previous = { sequence, system, toolsJson };
      },
    };
  }

  #addConversation(record: ConversationRecord): void {
    this.#unsent.push(record.sequence);
    if (record.sequence > this.#messages.last) {
      this.#conversation.push(record);
      this.#messages.add(record);
      return;
    }
    // Ahead of order: rebuild the messages once from every conversation record.
    this.#conversation.push(record);
    this.#conversation.sort((a, b) => a.sequence - b.sequence);
    this.#messages = new ConversationMessages();
    for (const known of this.#conversation) this.#messages.add(known);
  }

  #lines(state: LoopCall, after: number): string[] {
    const lines: string[] = [];
    const limit = this.#contiguous;
    for (const result of state.results) {
      if (result.sequence > after && result.sequence <= limit) lines.push(presentResult(result));
    }
    const finished = state.finished;
    if (finished && finished.sequence > after && finished.sequence <= limit) {
      const last = state.results.filter((result) => result.sequence < finished.sequence).at(-1);
      const text = presentFinish(finished, last);
      if (text !== undefined) lines.push(text);
    }
    return lines;
  }

  #index(record: JournalRecord): void {
    switch (record.kind) {
      case "user_message":
        this.#lastUserMessage = Math.max(this.#lastUserMessage, record.sequence);
        return;
      case "tool_call_started":
        if (record.toolCallId !== undefined) {
          this.#call(record.sequence).tool = record.tool;
        }
        return;
      case "tool_result":
        this.#calls.get(record.call)?.results.push(record);
        this.#calls.get(record.call)?.results.sort((a, b) => a.sequence - b.sequence);
        return;
      case "tool_returned":
        this.#calls.get(record.call)?.synchronous.resolve();
        return;
      case "tool_call_finished": {
        const state = this.#calls.get(record.call);
        if (!state) return;
        state.finished = record;
        state.synchronous.resolve();
        return;
      }
      case "tool_message":
      case "observation_message": {
        if (record.call === undefined) return;
        const state = this.#call(record.call);
        this.#answered.add(record.call);
        state.presented = Math.max(state.presented, record.through);
        return;
      }
    }
  }

  #call(call: number): LoopCall {
    let state = this.#calls.get(call);
    if (!state) {
      state = { tool: "", results: [], presented: 0, synchronous: Promise.withResolvers() };
      this.#calls.set(call, state);
    }
    return state;
  }
}
