// The Brain journal viewer: plain browser JavaScript over the viewer API (fetch and EventSource only).
// Every value from the journal is written as text (textContent), never parsed as HTML.

/** Characters of a payload shown before it is cut with a button to show the rest. */
const PAYLOAD_CHARS = 1500;
/** How long to wait before reopening a stream the browser gave up on (a refused or failed reconnect). */
const REOPEN_MS = 1000;
/** Outcomes that end a Tool call, besides `ok` and `error`, as the terminal cause names them. */
const ENDING_CAUSES = ["timeout", "cancelled", "unknown"];

const main = document.getElementById("main");
const who = document.getElementById("who");
const logout = document.getElementById("logout");

class Unauthorized extends Error {}

/** Builds an element: `attrs` set attributes (`on*` functions become listeners); strings become text nodes. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...children.flat().filter((child) => child !== undefined && child !== null));
  return node;
}

async function api(path, init = {}) {
  const response = await fetch(path, { ...init, headers: { accept: "application/json", ...init.headers } });
  if (response.status === 401) throw new Unauthorized();
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error?.message ?? `${response.status} ${response.statusText}`);
  return body;
}

function base64(text) {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

function formatDuration(ms) {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

function formatTime(at) {
  return new Date(at).toLocaleTimeString([], { hour12: false });
}

/** A payload as text, cut at PAYLOAD_CHARS with a button that shows the rest and one that cuts it again. */
function payload(value, className = "payload") {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2) ?? "undefined";
  const pre = el("pre", { class: className });
  if (text.length <= PAYLOAD_CHARS) {
    pre.textContent = text;
    return pre;
  }
  const toggle = el("button", { type: "button", class: "expand" });
  const show = (all) => {
    pre.textContent = all ? text : `${text.slice(0, PAYLOAD_CHARS)}…`;
    pre.dataset.truncated = String(!all);
    toggle.textContent = all ? "Show less" : `Show all (${text.length.toLocaleString("en")} characters)`;
  };
  toggle.addEventListener("click", () => show(pre.dataset.truncated === "true"));
  show(false);
  return el("div", { class: "cut" }, pre, toggle);
}

function badge(outcome, text = outcome) {
  return el("span", { class: "badge", "data-outcome": outcome }, text);
}

function outcomeText(outcome) {
  if (outcome.status === "ok") return payload(outcome.value);
  if (outcome.status === "error") {
    return el("div", { class: "error" }, el("code", {}, outcome.error.code), " ", outcome.error.message);
  }
  return outcome.message ? el("div", { class: "error" }, outcome.message) : undefined;
}

/** What a Tool call's end is called: its terminal cause when that is timeout, cancelled or unknown, else its outcome. */
function endLabel(finished) {
  return ENDING_CAUSES.includes(finished.cause) ? finished.cause : finished.outcome.status;
}

// ---------------------------------------------------------------- login

function showLogin(message) {
  who.textContent = "";
  logout.hidden = true;
  const operator = el("input", {
    name: "operator",
    type: "password",
    autocomplete: "off",
    placeholder: "operator token",
  });
  const hostId = el("input", { name: "host", autocomplete: "off", placeholder: "host id" });
  const hostToken = el("input", { name: "token", type: "password", autocomplete: "off", placeholder: "host token" });
  const status = el("p", { class: "note", role: "status" }, message ?? "");
  const submit = async (event, authorization) => {
    event.preventDefault();
    try {
      await login(authorization());
      route();
    } catch (error) {
      status.textContent = error instanceof Unauthorized ? "Those credentials are not accepted." : error.message;
    }
  };
  main.replaceChildren(
    el("h1", {}, "Sign in to see sessions"),
    el(
      "form",
      { id: "operator-login", onsubmit: (event) => submit(event, () => `Bearer ${operator.value}`) },
      el("label", {}, "Operator token ", operator),
      el("button", { type: "submit" }, "Sign in"),
    ),
    el(
      "form",
      {
        id: "host-login",
        onsubmit: (event) => submit(event, () => `Basic ${base64(`${hostId.value}:${hostToken.value}`)}`),
      },
      el("label", {}, "Host ", hostId),
      el("label", {}, " token ", hostToken),
      el("button", { type: "submit" }, "Sign in as host"),
    ),
    status,
  );
}

async function login(authorization) {
  signedIn(await api("/v1/viewer/login", { method: "POST", headers: { authorization } }));
}

function signedIn(principal) {
  who.textContent = principal.kind === "host" ? `host ${principal.id}` : "operator";
  logout.hidden = false;
}

logout.addEventListener("click", async () => {
  await api("/v1/viewer/logout", { method: "POST" });
  showLogin("Signed out.");
});

// ---------------------------------------------------------------- session list

async function showList() {
  document.title = "Brain journal";
  const rows = el("tbody");
  const more = el("button", { type: "button", id: "more", hidden: true }, "More sessions");
  const table = el(
    "table",
    { id: "sessions" },
    el(
      "thead",
      {},
      el("tr", {}, ["Session", "Created", "Model", "Host", "Tools", "Records"].map((h) => el("th", {}, h))),
    ),
    rows,
  );
  const empty = el("p", { class: "note", hidden: true }, "No sessions to show.");
  let cursor;
  const load = async () => {
    const page = await api(`/v1/sessions?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    for (const session of page.sessions) {
      rows.append(el(
        "tr",
        { "data-session": session.id },
        el("td", {}, el("a", { href: `#/s/${encodeURIComponent(session.id)}` }, session.id)),
        el("td", { title: new Date(session.createdAt).toISOString() }, new Date(session.createdAt).toLocaleString()),
        el("td", {}, session.model ? `${session.model.provider}/${session.model.model}` : "—"),
        el("td", {}, session.host ?? "—"),
        el("td", {}, session.tools.map((tool) => tool.name).join(", ") || "—"),
        el("td", { class: "num" }, String(session.head)),
      ));
    }
    cursor = page.next;
    more.hidden = cursor === undefined;
    empty.hidden = rows.childElementCount > 0;
  };
  more.addEventListener("click", () => load().catch(fail));
  main.replaceChildren(el("h1", {}, "Sessions"), table, empty, more);
  await load();
}

// ---------------------------------------------------------------- one session

/** A session's timeline: turns of messages, model calls and Tool call rows, updated in sequence order. */
class Timeline {
  constructor(container) {
    this.container = container;
    this.last = 0;
    this.turns = 0;
    this.turn = undefined;
    this.turnActivation = undefined;
    this.calls = new Map();
    this.models = new Map();
  }

  /** Applies the next record; false when it is not the next sequence (a gap), true when applied or already seen. */
  apply(record) {
    if (record.sequence <= this.last) return true;
    if (record.sequence !== this.last + 1) return false;
    this.last = record.sequence;
    this.container.dataset.last = String(record.sequence);
    const render = this[record.kind];
    if (render) render.call(this, record);
    else this.row(record, el("div", { class: "row other" }, this.head(record, record.kind), payload(record)));
    return true;
  }

  head(record, ...parts) {
    return el(
      "div",
      { class: "head" },
      el(
        "span",
        { class: "seq", title: new Date(record.at).toISOString() },
        `#${record.sequence} ${formatTime(record.at)}`,
      ),
      ...parts,
    );
  }

  row(record, node) {
    node.dataset.seq = String(record.sequence);
    node.dataset.kind = record.kind;
    (this.turn ?? this.newTurn("Before the first message")).append(node);
    return node;
  }

  newTurn(reason) {
    this.turns++;
    this.turnActivation = undefined;
    this.turn = el(
      "section",
      { class: "turn", "data-turn": this.turns },
      el("h2", {}, `Turn ${this.turns}`, el("small", {}, ` ${reason}`)),
    );
    this.container.append(this.turn);
    return this.turn;
  }

  /** Starts a new turn when a record of another activation than the current turn's arrives. */
  enter(activation, reason) {
    if (this.turn && (this.turnActivation === undefined || this.turnActivation === activation)) {
      this.turnActivation = activation;
      return;
    }
    this.newTurn(reason);
    this.turnActivation = activation;
  }

  user_message(record) {
    this.newTurn("user message");
    this.row(
      record,
      el("div", { class: "row msg user" }, this.head(record, el("b", {}, "User")), payload(record.content, "text")),
    );
  }

  observation_message(record) {
    if (this.turnActivation !== undefined) this.newTurn("woken by a Tool");
    this.row(
      record,
      el(
        "div",
        { class: "row msg observation" },
        this.head(record, el("b", {}, `Observation of call #${record.call}`)),
        payload(record.content, "text"),
      ),
    );
  }

  /** A streamed fragment of a reply: shown under its model call until the whole message commits. */
  assistant_delta(record) {
    const model = this.models.get(record.modelCall);
    if (!model) {
      return this.row(record, el("div", { class: "row other" }, this.head(record, record.kind), payload(record)));
    }
    model.streaming ??= model.node.appendChild(el("pre", { class: "text streaming" }));
    model.streaming.append(record.content);
  }

  assistant_message(record) {
    this.models.get(record.modelCall)?.streaming?.remove();
    const asks = record.toolCalls.map((call) => el("li", {}, el("code", {}, call.name), " ", payload(call.input)));
    this.row(
      record,
      el(
        "div",
        { class: "row msg assistant" },
        this.head(record, el("b", {}, "Assistant"), el("small", {}, ` from model call #${record.modelCall}`)),
        record.content ? payload(record.content, "text") : undefined,
        record.refusal ? el("div", { class: "error" }, `refused: ${record.refusal}`) : undefined,
        asks.length ? el("ul", { class: "asks" }, asks) : undefined,
      ),
    );
  }

  tool_message(record) {
    const about = record.call === undefined ? `tool call ${record.toolCallId}` : `call #${record.call}`;
    this.row(
      record,
      el(
        "div",
        { class: "row msg tool" },
        this.head(record, el("b", {}, `Tool message for ${about}`)),
        payload(record.content, "text"),
      ),
    );
  }

  model_call_started(record) {
    if (record.origin.kind === "agentloop") this.enter(record.activation, "woken");
    const state = badge("open", "pending");
    const details = el("span", { class: "detail" });
    const node = el(
      "div",
      { class: "row model", "data-model-call": record.sequence },
      this.head(record, el("b", {}, "Model call"), ` ${record.provider}/${record.model} `, state, details),
    );
    this.models.set(record.sequence, { record, node, state, details });
    const parent = record.origin.kind === "tool" ? this.calls.get(record.origin.call) : undefined;
    if (parent) {
      node.dataset.seq = String(record.sequence);
      parent.models.append(node);
    } else this.row(record, node);
  }

  model_call_finished(record) {
    const model = this.models.get(record.call);
    if (!model) {
      return this.row(record, el("div", { class: "row other" }, this.head(record, record.kind), payload(record)));
    }
    model.state.replaceWith(badge(record.outcome.status));
    const usage = record.usage ? ` · ${record.usage.inputTokens} in / ${record.usage.outputTokens} out tokens` : "";
    model.details.textContent = ` ${formatDuration(record.at - model.record.at)}${usage}`;
    if (record.outcome.status !== "ok") model.node.append(outcomeText(record.outcome) ?? "");
  }

  tool_call_started(record) {
    this.enter(record.activation, record.toolCallId === undefined ? "direct call" : "woken");
    const state = badge("open");
    const timing = el("span", { class: "detail timing" });
    const section = (title, className) => el("div", { class: className, hidden: true }, el("h4", {}, title));
    const call = {
      record,
      state,
      timing,
      events: section("Events", "events"),
      results: section("Results", "results"),
      models: el("div", { class: "models" }),
      end: el("div", { class: "end", hidden: true }),
      late: section("Late", "late"),
      returned: false,
      finished: undefined,
    };
    const summary = el(
      "summary",
      {},
      el(
        "span",
        { class: "seq", title: new Date(record.at).toISOString() },
        `#${record.sequence} ${formatTime(record.at)}`,
      ),
      el("b", {}, "Tool "),
      el("code", { class: "tool" }, record.tool),
      " ",
      state,
      timing,
    );
    call.node = el(
      "details",
      { class: "row call", "data-call": record.sequence, "data-tool": record.tool, "data-outcome": "open" },
      summary,
      el(
        "div",
        { class: "body" },
        el("h4", {}, "Input"),
        payload(record.input),
        call.models,
        call.events,
        call.results,
        call.end,
        call.late,
      ),
    );
    this.calls.set(record.sequence, call);
    this.row(record, call.node);
    this.tick(call);
  }

  tool_event(record) {
    this.inCall(record, (call) => {
      call.events.hidden = false;
      call.events.append(
        el(
          "div",
          { class: "event", "data-seq": record.sequence },
          this.head(record, el("code", {}, record.event)),
          payload(record.data),
        ),
      );
    });
  }

  tool_result(record) {
    this.inCall(record, (call) => {
      call.results.hidden = false;
      call.results.append(
        el(
          "div",
          { class: "result", "data-seq": record.sequence },
          this.head(record, badge(record.outcome.status)),
          outcomeText(record.outcome),
          record.content === undefined
            ? undefined
            : el("div", { class: "content" }, el("h5", {}, "content"), payload(record.content, "text")),
        ),
      );
    });
  }

  tool_returned(record) {
    this.inCall(record, (call) => {
      call.returned = true;
      if (!call.finished) this.setState(call, "open", "open · background");
    });
  }

  tool_call_finished(record) {
    this.inCall(record, (call) => {
      call.finished = record;
      const label = endLabel(record);
      this.setState(call, label, label);
      call.node.dataset.cause = record.cause;
      call.timing.textContent = ` ${formatDuration(record.at - call.record.at)} · cause ${record.cause}`;
      call.end.hidden = false;
      // A finish that repeats the published result shows it once, under Results.
      const shown = !call.results.hidden && record.outcome.status === "ok";
      call.end.append(
        el("h4", {}, "End"),
        this.head(record, badge(label), ` cause ${record.cause}`),
        shown ? undefined : outcomeText(record.outcome),
      );
    });
  }

  tool_call_late(record) {
    this.inCall(record, (call) => {
      call.late.hidden = false;
      call.late.append(
        el(
          "div",
          { class: "late-entry", "data-seq": record.sequence },
          this.head(record, `after the end: ${record.cause}`),
          record.outcome ? outcomeText(record.outcome) : undefined,
        ),
      );
    });
  }

  environment_created(record) {
    this.environment(record, "created", record.description);
  }

  environment_updated(record) {
    this.environment(record, "updated", record.description);
  }

  environment_deleted(record) {
    this.environment(record, "deleted");
  }

  environment_setup(record) {
    this.environment(
      record,
      `set up: ${record.outcome.status}`,
      record.outcome.status === "ok" ? undefined : record.outcome,
    );
  }

  environment(record, what, detail) {
    this.inCall(record, (call) => {
      call.events.hidden = false;
      call.events.append(
        el(
          "div",
          { class: "event environment", "data-seq": record.sequence },
          this.head(record, `Environment `, el("code", {}, record.environment), ` ${what}`),
          detail === undefined ? undefined : payload(detail),
        ),
      );
    });
  }

  inCall(record, update) {
    const call = this.calls.get(record.call);
    if (call) update(call);
    else this.row(record, el("div", { class: "row other" }, this.head(record, record.kind), payload(record)));
  }

  setState(call, outcome, text) {
    const next = badge(outcome, text);
    call.state.replaceWith(next);
    call.state = next;
    call.node.dataset.outcome = outcome;
    call.node.dataset.background = String(call.returned && !call.finished);
  }

  /** Shows how long each open call has been running. */
  tick(call = undefined) {
    const calls = call ? [call] : this.calls.values();
    for (const open of calls) {
      if (!open.finished) open.timing.textContent = ` open for ${formatDuration(Date.now() - open.record.at)}`;
    }
  }
}

/** Follows a session: loads its records page by page, then streams new ones, reopening the stream after failures. */
class Follower {
  constructor(id, timeline, connection) {
    this.id = id;
    this.timeline = timeline;
    this.connection = connection;
    this.source = undefined;
    this.stopped = false;
  }

  async start() {
    let from = 1;
    while (from !== undefined) {
      const page = await api(`/v1/sessions/${encodeURIComponent(this.id)}/records?from=${from}`);
      for (const record of page.records) this.timeline.apply(record);
      from = page.next;
    }
    this.open();
  }

  open() {
    if (this.stopped) return;
    this.state("connecting");
    const from = this.timeline.last + 1;
    const source = this.source = new EventSource(`/v1/sessions/${encodeURIComponent(this.id)}/stream?from=${from}`);
    source.addEventListener("open", () => this.state("live"));
    source.addEventListener("record", (event) => {
      if (this.timeline.apply(JSON.parse(event.data))) return;
      // A gap: start the stream again right after the last record shown.
      source.close();
      this.open();
    });
    source.addEventListener("error", () => {
      if (source !== this.source) return;
      if (source.readyState === EventSource.CLOSED) {
        this.state("disconnected");
        setTimeout(() => source === this.source && this.open(), REOPEN_MS);
      } else this.state("reconnecting");
    });
  }

  state(name) {
    this.connection.dataset.state = name;
    this.connection.textContent = name;
  }

  stop() {
    this.stopped = true;
    this.source?.close();
  }
}

let following;
let ticking;

async function showSession(id) {
  document.title = `${id} · Brain journal`;
  const meta = await api(`/v1/sessions/${encodeURIComponent(id)}`);
  const connection = el("span", { id: "connection", "data-state": "loading" }, "loading");
  const timeline = el("div", { id: "timeline", "data-session": id, "data-last": "0" });
  main.replaceChildren(
    el("p", {}, el("a", { href: "#/" }, "← Sessions")),
    el("h1", {}, "Session ", el("code", {}, meta.id), " ", connection),
    el(
      "p",
      { class: "meta" },
      `created ${new Date(meta.createdAt).toLocaleString()}`,
      meta.model ? ` · model ${meta.model.provider}/${meta.model.model}` : "",
      meta.host ? ` · host ${meta.host}` : "",
      ` · tools ${meta.tools.map((tool) => tool.name).join(", ") || "none"}`,
    ),
    timeline,
  );
  const view = new Timeline(timeline);
  following = new Follower(id, view, connection);
  ticking = setInterval(() => view.tick(), 1000);
  await following.start();
}

// ---------------------------------------------------------------- routing

function fail(error) {
  if (error instanceof Unauthorized) showLogin();
  else main.replaceChildren(el("p", { class: "note error", role: "alert" }, error.message));
}

async function route() {
  following?.stop();
  clearInterval(ticking);
  const hash = location.hash;
  try {
    if (hash.startsWith("#token=")) {
      // A link from `deno task view` carries the operator token in the fragment, which is never sent to a server.
      await login(`Bearer ${decodeURIComponent(hash.slice("#token=".length))}`);
      history.replaceState(null, "", `${location.pathname}#/`);
    } else signedIn(await api("/v1/viewer/me"));
    const session = /^#\/s\/(.+)$/.exec(location.hash);
    if (session) await showSession(decodeURIComponent(session[1]));
    else await showList();
  } catch (error) {
    fail(error);
  }
}

globalThis.addEventListener("hashchange", route);
route();
