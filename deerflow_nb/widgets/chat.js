// The chat widget's view. State arrives as synced traits (items, title, status, todos, usage,
// files, progress); user actions go back as model.send({kind: "send" | "stop" | "respond" | "skip"
// | "ping", ...}). The same view renders from a saved notebook's widget state with no kernel: it
// then says so and shows the conversation as it ended.

// Per-thread view memory, kept across views of the same chat: JupyterLab re-creates the view when
// the output is refreshed at the end of a run, and a half-typed follow-up must survive that.
const DF_VIEW_MEMORY = new Map();
// When this page first saw each running tool call (for the elapsed time on its card).
const DF_TOOL_STARTED = new Map();

function dfElapsed(seconds) {
  const s = Math.max(0, Math.round(seconds));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

function dfToolCard(item) {
  const running = item.status === "running";
  const mark = running
    ? dfEl("span", { class: "dfw-spinner", title: "running" })
    : dfEl("span", { class: `dfw-dot dfw-dot-${item.status}`, title: item.status },
      item.status === "error" ? "✖" : item.status === "stopped" ? "■" : "●");
  const args = JSON.stringify(item.args || {}, null, 2);
  const summary = item.args && item.args.description ? ` — ${item.args.description}` : "";
  const failed = item.status === "error"
    ? dfEl("span", { class: "dfw-failtag" },
      item.exit_code !== undefined && item.exit_code !== null ? `failed (exit ${item.exit_code})`
        : item.error_type ? `failed (${item.error_type.replace(/_/g, " ")})` : "failed")
    : item.status === "stopped" ? dfEl("span", { class: "dfw-elapsed" }, "stopped") : null;
  const elapsed = running ? dfEl("span", { class: "dfw-elapsed", "data-started-for": item.id }) : null;
  return dfEl("details", { class: `dfw-card dfw-tool dfw-tool-${item.status}`, "data-tool": item.name,
    "data-status": item.status },
    dfEl("summary", {}, mark, " ", dfEl("code", {}, item.name), summary, failed, elapsed),
    dfEl("div", {}, dfEl("b", {}, "Arguments")), dfEl("pre", {}, args),
    item.result !== null && item.result !== undefined
      ? [dfEl("div", {}, dfEl("b", {}, item.status === "error" ? "Error" : "Result")), dfEl("pre", {}, item.result)]
      : null);
}

function dfSubagentCard(item) {
  const dot = ["started", "running"].includes(item.status) ? "running" : item.status === "completed" ? "success" : "error";
  return dfEl("details", { class: "dfw-card dfw-subagent", open: item.status === "running" || item.status === "started" },
    dfEl("summary", {}, dfEl("span", { class: `dfw-dot dfw-dot-${dot}` }, "●"),
      ` subagent: ${item.description || item.id} (${item.status.replace("_", " ")})`),
    item.message ? dfEl("pre", {}, item.message) : null);
}

// "load" is given inside a live view: a button that puts the file into a kernel variable (thread.load)
function dfFileCard(file, load) {
  const card = dfEl("div", { class: "dfw-card dfw-file", "data-path": file.path });
  const size = dfSize(file.size);
  const link = file.data_url
    ? dfEl("a", { href: file.data_url, download: file.name, title: "download" }, `↓ ${file.name}`)
    : dfEl("span", {}, file.name);
  const loader = load ? dfEl("button", { class: "dfw-load", title: "thread.load(path) into a notebook variable" },
    "Load into variable") : null;
  if (loader) loader.addEventListener("click", () => load(file));
  card.append(dfEl("div", { class: "dfw-file-head" }, link, ` · ${file.mime} · ${size}`, file.note ? ` · ${file.note}` : "",
    loader ? " " : "", loader));
  if (file.error) card.append(dfEl("div", { class: "dfw-error" }, file.error));
  if (file.kind === "image") card.append(dfEl("img", { src: file.data_url, alt: file.name }));
  if (file.kind === "table" && file.rows && file.rows.length) {
    const [head, ...rows] = file.rows;
    card.append(dfEl("table", { class: "dfw-table" },
      dfEl("thead", {}, dfEl("tr", {}, head.map((c) => dfEl("th", {}, c)))),
      dfEl("tbody", {}, rows.map((r) => dfEl("tr", {}, r.map((c) => dfEl("td", {}, c)))))));
    if (file.truncated) card.append(dfEl("div", { class: "dfw-help" }, "(first rows only)"));
  }
  if (file.kind === "text") {
    if (file.markdown) { const box = dfEl("div", { class: "dfw-md" }); box.innerHTML = dfMarkdown(file.text); dfDecorateCode(box); card.append(box); }
    else card.append(dfEl("pre", {}, file.text));
  }
  return card;
}

// Code blocks get a bar with their language, a copy button and "use in notebook".
function dfDecorateCode(box) {
  for (const pre of box.querySelectorAll("pre")) {
    if (pre.parentNode && pre.parentNode.classList && pre.parentNode.classList.contains("dfw-codebox")) continue;
    const code = pre.querySelector("code") || pre;
    const lang = pre.getAttribute("data-lang") || ((code.className || "").match(/language-([\w+-]+)/) || [])[1] || "";
    const wrap = dfEl("div", { class: "dfw-codebox" });
    const note = dfEl("span", { class: "dfw-help dfw-use-note" });
    const use = dfEl("button", { class: "dfw-btn dfw-btn-small dfw-use", type: "button",
      title: "copy this code so it can be pasted into a new cell" }, "Use in notebook");
    use.addEventListener("click", async (e) => {
      e.preventDefault();
      const ok = await dfCopyText(code.textContent);
      // an anywidget view cannot reach JupyterLab's notebook commands: the code goes to the clipboard
      note.textContent = ok ? "Copied: press Esc, B, then Ctrl+V to paste it into a new cell below."
        : "Could not copy: select the code and copy it by hand.";
    });
    pre.replaceWith(wrap);
    wrap.append(dfEl("div", { class: "dfw-codebar" }, dfEl("span", { class: "dfw-lang" }, lang),
      dfCopyButton(() => code.textContent), use), pre, note);
  }
}

function render({ model, el }) {
  const root = dfEl("div", { class: "dfw-root dfw-chat" });
  el.append(root);
  const memoryKey = model.get("thread_id") || "";
  const memory = DF_VIEW_MEMORY.get(memoryKey) || { draft: "", open: new Set(), cards: new Map() };
  DF_VIEW_MEMORY.set(memoryKey, memory);
  const title = dfEl("span", { class: "dfw-title" });
  // the thread's name and the line that reopens it after a kernel restart
  const reopen = dfEl("code", { class: "dfw-reopen", title: "reopen this conversation (e.g. after a kernel restart)" });
  const status = dfEl("span", { class: "dfw-status" });
  const usage = dfEl("span", { class: "dfw-usage" });
  const notice = dfEl("div", { class: "dfw-notice", role: "status" });
  const goalBanner = dfEl("div", { class: "dfw-goal", role: "status" });
  const list = dfEl("div", { class: "dfw-list" });
  const todos = dfEl("div", { class: "dfw-todos" });
  const files = dfEl("div", { class: "dfw-files" });
  const input = dfEl("textarea", { rows: 2, placeholder: "Send a follow-up… (Shift+Enter for a new line)" });
  input.value = memory.draft;
  input.addEventListener("input", () => { memory.draft = input.value; });
  const send = dfEl("button", { class: "dfw-btn dfw-primary dfw-send" }, "Send");
  const stop = dfEl("button", { class: "dfw-btn dfw-stop" }, "Stop");
  const browser = dfEl("div", { class: "dfw-browser" });
  root.append(browser, dfEl("div", { class: "dfw-header" }, title, reopen, usage, status), notice, goalBanner, todos, list, files,
    dfEl("div", { class: "dfw-input" }, input, send, stop));

  let kernel = null; // null: not known yet, true: answering, false: gone
  const submit = () => {
    const text = input.value.trim();
    if (!text || model.get("status") === "running" || kernel === false) return;
    model.send({ kind: "send", text });
    input.value = "";
    memory.draft = "";
  };
  send.addEventListener("click", submit);
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit(); } });
  stop.addEventListener("click", () => model.send({ kind: "stop" }));

  // Items are re-rendered in place by id; an assistant item only re-parses its own text.
  const nodes = new Map();
  // "Load into variable" on a presented file: the kernel runs thread.load(path) into the name given
  const loadFile = (file) => {
    const stem = String(file.name || "data").replace(/\.[^.]*$/, "").replace(/[^A-Za-z0-9_]/g, "_");
    const suggested = /^[A-Za-z_]/.test(stem) ? stem : `f_${stem}`;
    const name = globalThis.prompt ? globalThis.prompt("Load into the notebook variable:", suggested) : suggested;
    if (name) model.send({ kind: "load", path: file.path, name: name.trim() });
  };
  const fileBoxes = new Map(); // anchor item id -> the files presented by that call
  // a message you sent: its text, an Edit button (rerun from an edited copy) and the branch switcher
  const userItem = (item) => {
    const node = dfEl("div", { class: "dfw-msg dfw-user", "data-message-id": item.id });
    const text = dfEl("div", { class: "dfw-user-text" }, item.text);
    node.append(text);
    const controls = model.get("controls") || {};
    const idle = model.get("status") !== "running" && kernel !== false;
    const bar = dfEl("div", { class: "dfw-msgbar dfw-userbar" });
    const sw = (controls.switchers || {})[item.id];
    if (sw) {
      const go = (branch) => () => { if (branch) model.send({ kind: "checkout", branch_id: branch }); };
      bar.append(dfEl("span", { class: "dfw-switcher", role: "group", "aria-label": "alternatives" },
        dfEl("button", { class: "dfw-btn dfw-btn-small dfw-branch-prev", type: "button", disabled: !idle || !sw.prev,
          title: "previous version", onclick: go(sw.prev) }, "‹"),
        dfEl("span", { class: "dfw-branch-pos" }, `${sw.index} / ${sw.count}`),
        dfEl("button", { class: "dfw-btn dfw-btn-small dfw-branch-next", type: "button", disabled: !idle || !sw.next,
          title: "next version", onclick: go(sw.next) }, "›")));
    }
    // the editor stays open (with what was typed) when the chat redraws this message meanwhile
    const openEditor = () => {
      memory.editing = memory.editing && memory.editing.id === item.id ? memory.editing : { id: item.id, value: item.text };
      const box = dfEl("textarea", { class: "dfw-edit-input", rows: 2, "aria-label": "edited message" });
      box.value = memory.editing.value;
      box.addEventListener("input", () => { if (memory.editing) memory.editing.value = box.value; });
      const save = dfEl("button", { class: "dfw-btn dfw-btn-small dfw-primary dfw-edit-save", type: "button",
        disabled: !idle }, "Save & rerun");
      const cancel = dfEl("button", { class: "dfw-btn dfw-btn-small dfw-edit-cancel", type: "button" }, "Cancel");
      const form = dfEl("div", { class: "dfw-edit-form" }, box, save, cancel);
      save.addEventListener("click", () => {
        const v = box.value.trim();
        if (!v) return;
        memory.editing = null;
        model.send({ kind: "edit", message_id: item.id, text: v });
      });
      cancel.addEventListener("click", () => { memory.editing = null; form.replaceWith(text); bar.hidden = false; });
      text.replaceWith(form);
      bar.hidden = true;
      setTimeout(() => box.focus(), 0);
    };
    if ((controls.editable || []).includes(item.id)) {
      const edit = dfEl("button", { class: "dfw-btn dfw-btn-small dfw-edit", type: "button", disabled: !idle,
        title: "edit this message and rerun from here; the current continuation stays as a branch" }, "✎ Edit");
      edit.addEventListener("click", openEditor);
      bar.append(edit);
    }
    if (bar.childNodes.length) node.append(bar);
    if (memory.editing && memory.editing.id === item.id) openEditor();
    return node;
  };
  const renderItem = (item) => {
    switch (item.kind) {
      case "user": return userItem(item);
      case "assistant": {
        const node = dfEl("div", { class: "dfw-msg dfw-assistant" + (item.interrupted ? " dfw-interrupted" : "") });
        const body = dfEl("div", { class: "dfw-md-body" });
        body.innerHTML = dfMarkdown(item.text);
        dfDecorateCode(body);
        node.append(body);
        if (item.interrupted) {
          node.append(dfEl("div", { class: "dfw-interrupted-tag", title: item.stop_reason || "" },
            `⏸ interrupted${item.stop_reason ? ` (${String(item.stop_reason).replace(/_/g, " ")})` : ""}: partial answer`));
        }
        const regen = (model.get("controls") || {}).regenerate === item.id && model.get("status") !== "running"
          ? dfEl("button", { class: "dfw-btn dfw-btn-small dfw-regenerate", type: "button", disabled: kernel === false,
            title: "rerun this turn; the current answer stays as a branch",
            onclick: () => model.send({ kind: "regenerate" }) }, "↻ Regenerate") : null;
        if (item.text || regen) node.append(dfEl("div", { class: "dfw-msgbar" },
          item.text ? dfCopyButton(() => item.text, "Copy answer") : null, regen));
        return node;
      }
      case "tool": return dfToolCard(item);
      case "subagent": return dfSubagentCard(item);
      case "input_request": {
        if (!memory.cards.has(item.id)) memory.cards.set(item.id, {});  // what was entered survives redraws
        return dfRequestCard(item.request, {
          answered: item.answered, answerText: item.answer_text, error: item.error, draft: memory.cards.get(item.id),
          disabled: model.get("status") === "running" || kernel === false,
          onSubmit: (answer) => model.send({ kind: "respond", tool_call_id: item.id, answer }),
          onSkip: () => model.send({ kind: "skip", tool_call_id: item.id }) });
      }
      case "error": return dfEl("div", { class: "dfw-msg dfw-error", role: "alert" }, "⚠ ", item.text);
      case "stopped": return dfEl("div", { class: "dfw-msg dfw-stopped" }, "■ ", item.text);
      case "notice": return dfEl("div", { class: "dfw-msg dfw-stopped dfw-loaded" }, "✔ ", item.text);
      default: return dfEl("div", {}, JSON.stringify(item));
    }
  };
  const drawItems = () => {
    const items = model.get("items") || [];
    const keep = new Set();
    const sequence = [];
    for (const item of items) {
      const key = `${item.kind}:${item.id}`;
      keep.add(key);
      const sig = JSON.stringify(item) + (item.kind === "input_request" ? `${model.get("status")}${kernel}` : "")
        + (item.kind === "user" || item.kind === "assistant"
          ? `${model.get("status")}${kernel}${JSON.stringify(model.get("controls") || {})}` : "");
      let entry = nodes.get(key);
      if (!entry || entry.sig !== sig) {
        const node = renderItem(item);
        // keep an open card open across updates (and across views of this chat)
        if ((entry && entry.node.open) || memory.open.has(key)) node.open = true;
        if (node.tagName === "DETAILS") node.addEventListener("toggle", () => {
          if (node.open) memory.open.add(key); else memory.open.delete(key);
        });
        if (entry) entry.node.replaceWith(node);
        entry = { node, sig };
        nodes.set(key, entry);
      }
      if (item.kind === "tool" && item.status === "running" && !DF_TOOL_STARTED.has(item.id)) {
        DF_TOOL_STARTED.set(item.id, Date.now());
      }
      sequence.push(entry.node);
      if (fileBoxes.has(item.id)) sequence.push(fileBoxes.get(item.id));
    }
    let previous = null;
    for (const node of sequence) {
      if (node.previousSibling !== previous || node.parentNode !== list) {
        if (previous) previous.after(node); else list.prepend(node);
      }
      previous = node;
    }
    for (const [key, entry] of nodes) if (!keep.has(key)) { entry.node.remove(); nodes.delete(key); }
    for (const box of list.querySelectorAll(".dfw-turn-files")) if (!sequence.includes(box)) box.remove();
    tick();
  };
  // running tool cards show how long they have been running
  const tick = () => {
    for (const span of list.querySelectorAll("[data-started-for]")) {
      const started = DF_TOOL_STARTED.get(span.getAttribute("data-started-for"));
      if (started) span.textContent = dfElapsed((Date.now() - started) / 1000);
    }
  };
  // the header's seconds keep counting between progress events (text streams without them)
  let progressAt = Date.now();
  model.on("change:progress", () => { progressAt = Date.now(); });
  const ticker = setInterval(() => { tick(); if (model.get("status") === "running") drawHeader(); }, 1000);
  const drawHeader = () => {
    title.textContent = model.get("title") || "DeerFlow";
    const id = model.get("thread_id") || "";
    reopen.textContent = id ? `agent.thread(${JSON.stringify(id)})` : "";
    let s = model.get("status") || "idle";
    if (kernel === false && (s === "running" || s === "waiting")) s = "disconnected";
    const p = model.get("progress") || {};
    // while running, say what the run is doing: phase, seconds, tokens so far
    status.textContent = s === "running" && p.label
      ? `running · ${p.label}${p.tool ? ` (${p.tool})` : ""} · ${Math.round((p.elapsed || 0) + (Date.now() - progressAt) / 1000)} s` +
        (p.tokens ? ` · ${p.tokens} tokens` : "")
      : s;
    status.className = `dfw-status dfw-status-${s}`;
    const u = model.get("usage") || {};
    usage.textContent = u.total_tokens ? `${u.total_tokens} tokens (${u.input_tokens || 0} in / ${u.output_tokens || 0} out)` : "";
    stop.disabled = s !== "running";
    send.disabled = s === "running" || kernel === false;
    input.disabled = kernel === false;
  };
  const drawTodos = () => {
    const items = model.get("todos") || [];
    todos.replaceChildren();
    if (!items.length) return;
    const marks = { completed: "☑", in_progress: "▶", pending: "☐" };
    todos.append(dfEl("details", { class: "dfw-card", open: true }, dfEl("summary", {}, "Plan"),
      dfEl("ul", {}, items.map((t) => dfEl("li", { class: `dfw-todo-${t.status}` }, `${marks[t.status] || "☐"} ${t.content}`)))));
  };
  // presented files show in their turn, right after the present_files card that presented them
  const drawFiles = () => {
    const all = model.get("files") || [];
    const anchors = new Set((model.get("items") || []).map((i) => i.id));
    const byAnchor = new Map();
    const loose = [];
    for (const file of all) {
      if (file.anchor && anchors.has(file.anchor)) {
        if (!byAnchor.has(file.anchor)) byAnchor.set(file.anchor, []);
        byAnchor.get(file.anchor).push(file);
      } else loose.push(file);
    }
    fileBoxes.clear();
    for (const [anchor, group] of byAnchor) {
      fileBoxes.set(anchor, dfEl("div", { class: "dfw-turn-files", "data-anchor": anchor },
        group.map((f) => dfFileCard(f, loadFile))));
    }
    files.replaceChildren(...loose.map((f) => dfFileCard(f, loadFile)));
    drawItems();
  };
  // agent.ui(): this user's threads (open, rename, delete, new) and the model picker
  // the panel and its summary are made once, so an update never closes a list the user opened
  const threadsSummary = dfEl("summary", {});
  const threadsBody = dfEl("div", {});
  const panel = dfEl("details", { class: "dfw-card dfw-threads", open: !!memory.threadsOpen }, threadsSummary, threadsBody);
  panel.addEventListener("toggle", () => { memory.threadsOpen = panel.open; });
  const bar = dfEl("div", { class: "dfw-browser-bar" });
  const drawBrowser = () => {
    if (!model.get("browser")) { browser.replaceChildren(); return; }
    if (!browser.firstChild) browser.append(bar, panel);
    const busy = model.get("status") === "running" || kernel === false;
    const current = model.get("thread_id");
    const models = model.get("models") || [];
    const picker = dfEl("select", { class: "dfw-model", title: "model for the next messages",
      "aria-label": "model", disabled: kernel === false,
      onchange: (e) => model.send({ kind: "set_model", model_name: e.target.value }) },
      dfEl("option", { value: "" }, "default model"),
      models.map((m) => dfEl("option", { value: m.name, selected: model.get("model_name") === m.name },
        m.display_name || m.name)));
    const rows = (model.get("threads") || []).map((t) => {
      const row = dfEl("li", { class: "dfw-thread" + (t.thread_id === current ? " dfw-thread-current" : ""),
        "data-thread-id": t.thread_id });
      const name = t.title || "(untitled)";
      const open = dfEl("button", { class: "dfw-linkbtn dfw-thread-open", type: "button", disabled: busy,
        title: t.thread_id, onclick: () => model.send({ kind: "open_thread", thread_id: t.thread_id }) }, name);
      const when = dfEl("span", { class: "dfw-help" }, t.status === "running" ? "running" : t.updated_at || "");
      const rename = dfEl("button", { class: "dfw-btn dfw-btn-small dfw-thread-rename", type: "button", disabled: kernel === false,
        onclick: () => {
          const box = dfEl("input", { class: "dfw-rename-input", type: "text", "aria-label": "new title" });
          box.value = t.title || "";
          const save = () => { const v = box.value.trim(); if (v && v !== t.title) model.send({ kind: "rename_thread", thread_id: t.thread_id, title: v }); else drawBrowser(); };
          box.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); save(); } if (e.key === "Escape") drawBrowser(); });
          open.replaceWith(box);
          rename.textContent = "Save";
          rename.onclick = save;
          box.focus();
        } }, "Rename");
      let armed = false;
      const del = dfEl("button", { class: "dfw-btn dfw-btn-small dfw-thread-delete", type: "button",
        disabled: kernel === false || (busy && t.thread_id === current),
        onclick: () => {
          if (!armed) { armed = true; del.textContent = "Delete?"; del.classList.add("dfw-armed"); return; }
          model.send({ kind: "delete_thread", thread_id: t.thread_id });
        } }, "Delete");
      row.append(open, " ", when, " ", rename, del);
      return row;
    });
    threadsSummary.textContent = `Threads (${rows.length})`;
    threadsBody.replaceChildren(rows.length ? dfEl("ul", { class: "dfw-thread-list" }, rows)
      : dfEl("div", { class: "dfw-help" }, "No threads yet."));
    const fresh = dfEl("button", { class: "dfw-btn dfw-new-thread", type: "button", disabled: busy,
      onclick: () => model.send({ kind: "new_thread" }) }, "New thread");
    bar.replaceChildren(fresh, picker);
  };
  // goal mode: the objective, continuations used, and the evaluator's latest verdict
  const drawGoal = () => {
    const g = model.get("goal") || {};
    goalBanner.replaceChildren();
    goalBanner.hidden = !g.objective;
    if (!g.objective) return;
    const max = g.max_continuations || 0;
    const used = Math.min(g.continuations || 0, max);
    const state = g.met ? "met" : g.stand_down_reason ? "stopped" : g.active === false ? "cleared" : "active";
    goalBanner.className = `dfw-goal dfw-goal-${state}`;
    const verdict = g.met ? "✔ goal met"
      : g.stand_down_reason ? `stopped: ${String(g.stand_down_reason).replace(/_/g, " ")}`
        : g.decision === "continue" ? "not met yet, continuing" : g.blocker ? String(g.blocker).replace(/_/g, " ") : "";
    goalBanner.append(dfEl("span", { class: "dfw-goal-label" }, "Goal: "),
      dfEl("span", { class: "dfw-goal-objective" }, g.objective),
      dfEl("span", { class: "dfw-goal-progress", title: "hidden continuations used this run" },
        ` · continuations ${used} / ${max}`),
      dfEl("progress", { class: "dfw-goal-bar", max: String(max || 1), value: String(g.met ? max || 1 : used) }),
      verdict ? dfEl("span", { class: "dfw-goal-verdict", title: g.reason || "" }, ` ${verdict}`) : null);
  };
  const drawAll = () => { drawHeader(); drawGoal(); drawTodos(); drawFiles(); drawBrowser(); };

  const watch = dfKernelWatch(model, (alive) => {
    kernel = alive;
    notice.textContent = alive ? "" : (model.get("status") === "running"
      ? "No answer from the kernel: it is busy, restarted or shut down. Live updates have stopped; re-run the cell to reattach."
      : "Not connected to a kernel: this is the conversation as it was saved. Re-run the cell to continue it.");
    drawHeader();
    drawItems();
    drawBrowser();
  });

  model.on("change:items", drawFiles);
  model.on("change:title", drawHeader);
  model.on("change:thread_id", drawHeader);
  model.on("change:usage", drawHeader);
  model.on("change:progress", drawHeader);
  model.on("change:status", () => { drawHeader(); drawItems(); drawBrowser(); });
  for (const name of ["threads", "models", "model_name", "browser", "thread_id"]) model.on(`change:${name}`, drawBrowser);
  model.on("change:todos", drawTodos);
  model.on("change:goal", drawGoal);
  model.on("change:controls", drawItems);
  model.on("change:files", drawFiles);
  drawAll();
  return () => { clearInterval(ticker); watch.stop(); nodes.clear(); };
}

export default { render };
