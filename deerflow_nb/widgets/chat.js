// The chat widget's view. State arrives as synced traits (items, title, status, todos, usage,
// files); user actions go back as model.send({kind: "send" | "stop" | "respond", ...}).

function dfToolCard(item) {
  const status = dfEl("span", { class: `dfw-dot dfw-dot-${item.status}`, title: item.status }, "●");
  const args = JSON.stringify(item.args || {}, null, 2);
  const summary = item.args && item.args.description ? ` — ${item.args.description}` : "";
  return dfEl("details", { class: "dfw-card dfw-tool" + (item.status === "error" ? " dfw-tool-error" : ""),
    "data-tool": item.name },
    dfEl("summary", {}, status, " ", dfEl("code", {}, item.name), summary),
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

function dfFileCard(file) {
  const card = dfEl("div", { class: "dfw-card dfw-file", "data-path": file.path });
  const size = file.size >= 1024 ? `${(file.size / 1024).toFixed(1)} KiB` : `${file.size} B`;
  const link = file.data_url
    ? dfEl("a", { href: file.data_url, download: file.name, title: "download" }, `↓ ${file.name}`)
    : dfEl("span", {}, file.name);
  card.append(dfEl("div", { class: "dfw-file-head" }, link, ` · ${file.mime} · ${size}`, file.note ? ` · ${file.note}` : ""));
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
    if (file.markdown) { const box = dfEl("div", { class: "dfw-md" }); box.innerHTML = dfMarkdown(file.text); card.append(box); }
    else card.append(dfEl("pre", {}, file.text));
  }
  return card;
}

function render({ model, el }) {
  const root = dfEl("div", { class: "dfw-root dfw-chat" });
  dfStyle(el);
  el.append(root);
  const title = dfEl("span", { class: "dfw-title" });
  const status = dfEl("span", { class: "dfw-status" });
  const usage = dfEl("span", { class: "dfw-usage" });
  const list = dfEl("div", { class: "dfw-list" });
  const todos = dfEl("div", { class: "dfw-todos" });
  const files = dfEl("div", { class: "dfw-files" });
  const input = dfEl("textarea", { rows: 2, placeholder: "Send a follow-up… (Shift+Enter for a new line)" });
  const send = dfEl("button", { class: "dfw-btn dfw-primary dfw-send" }, "Send");
  const stop = dfEl("button", { class: "dfw-btn dfw-stop" }, "Stop");
  root.append(dfEl("div", { class: "dfw-header" }, title, usage, status), todos, list, files,
    dfEl("div", { class: "dfw-input" }, input, send, stop));

  const submit = () => {
    const text = input.value.trim();
    if (!text || model.get("status") === "running") return;
    model.send({ kind: "send", text });
    input.value = "";
  };
  send.addEventListener("click", submit);
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit(); } });
  stop.addEventListener("click", () => model.send({ kind: "stop" }));

  // Items are re-rendered in place by id; an assistant item only re-parses its own text.
  const nodes = new Map();
  const renderItem = (item) => {
    switch (item.kind) {
      case "user": return dfEl("div", { class: "dfw-msg dfw-user" }, item.text);
      case "assistant": { const node = dfEl("div", { class: "dfw-msg dfw-assistant" }); node.innerHTML = dfMarkdown(item.text); return node; }
      case "tool": return dfToolCard(item);
      case "subagent": return dfSubagentCard(item);
      case "input_request": return dfRequestCard(item.request, {
        answered: item.answered, answerText: item.answer_text, error: item.error,
        disabled: model.get("status") === "running",
        onSubmit: (answer) => model.send({ kind: "respond", tool_call_id: item.id, answer }) });
      case "error": return dfEl("div", { class: "dfw-msg dfw-error" }, "⚠ ", item.text);
      default: return dfEl("div", {}, JSON.stringify(item));
    }
  };
  const drawItems = () => {
    const items = model.get("items") || [];
    const keep = new Set();
    let previous = null;
    for (const item of items) {
      const key = `${item.kind}:${item.id}`;
      keep.add(key);
      const sig = JSON.stringify(item) + (item.kind === "input_request" ? model.get("status") : "");
      let entry = nodes.get(key);
      if (!entry || entry.sig !== sig) {
        const node = renderItem(item);
        // keep an open tool card open across updates
        if (entry && entry.node.open) node.open = true;
        if (entry) entry.node.replaceWith(node);
        entry = { node, sig };
        nodes.set(key, entry);
      }
      if (entry.node.previousSibling !== previous || entry.node.parentNode !== list) {
        if (previous) previous.after(entry.node); else list.prepend(entry.node);
      }
      previous = entry.node;
    }
    for (const [key, entry] of nodes) if (!keep.has(key)) { entry.node.remove(); nodes.delete(key); }
  };
  const drawHeader = () => {
    title.textContent = model.get("title") || "DeerFlow";
    const s = model.get("status") || "idle";
    const p = model.get("progress") || {};
    // while running, say what the run is doing: phase, seconds, tokens so far
    status.textContent = s === "running" && p.label
      ? `running · ${p.label}${p.tool ? ` (${p.tool})` : ""} · ${Math.round(p.elapsed || 0)} s` +
        (p.tokens ? ` · ${p.tokens} tokens` : "")
      : s;
    status.className = `dfw-status dfw-status-${s}`;
    const u = model.get("usage") || {};
    usage.textContent = u.total_tokens ? `${u.total_tokens} tokens (${u.input_tokens || 0} in / ${u.output_tokens || 0} out)` : "";
    stop.disabled = s !== "running";
    send.disabled = s === "running";
  };
  const drawTodos = () => {
    const items = model.get("todos") || [];
    todos.replaceChildren();
    if (!items.length) return;
    const marks = { completed: "☑", in_progress: "▶", pending: "☐" };
    todos.append(dfEl("details", { class: "dfw-card", open: true }, dfEl("summary", {}, "Plan"),
      dfEl("ul", {}, items.map((t) => dfEl("li", { class: `dfw-todo-${t.status}` }, `${marks[t.status] || "☐"} ${t.content}`)))));
  };
  const drawFiles = () => {
    files.replaceChildren(...(model.get("files") || []).map(dfFileCard));
  };
  const drawAll = () => { drawHeader(); drawItems(); drawTodos(); drawFiles(); };

  model.on("change:items", drawItems);
  model.on("change:title", drawHeader);
  model.on("change:usage", drawHeader);
  model.on("change:progress", drawHeader);
  model.on("change:status", () => { drawHeader(); drawItems(); });
  model.on("change:todos", drawTodos);
  model.on("change:files", drawFiles);
  drawAll();
  return () => nodes.clear();
}

export default { render };
