// The workspace diff widget's view: one collapsible card per changed file, unified or side by side,
// with old/new line numbers. Only the lines before a file's first hunk are headers, so a deleted line
// that starts with "--" (or an added one starting with "++") stays a change.

const DF_DIFF_OPEN = new Map(); // run id -> paths whose cards the user opened or closed (kept across updates)

// Parsed rows of a unified diff: {kind: "hunk"|"ctx"|"add"|"del"|"meta", text, old, new}.
function dfDiffRows(diff) {
  const rows = [];
  let inHunk = false;
  let oldNo = 0, newNo = 0;
  const lines = String(diff || "").replace(/\n$/, "").split("\n");
  for (const line of lines) {
    const hunk = line.match(/^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/);
    if (hunk) {
      inHunk = true;
      oldNo = Number(hunk[1]); newNo = Number(hunk[2]);
      rows.push({ kind: "hunk", text: line });
    } else if (!inHunk) {
      rows.push({ kind: "meta", text: line });
    } else if (line.startsWith("\\")) {
      rows.push({ kind: "meta", text: line }); // "\ No newline at end of file"
    } else if (line.startsWith("+")) {
      rows.push({ kind: "add", text: line.slice(1), new: newNo++ });
    } else if (line.startsWith("-")) {
      rows.push({ kind: "del", text: line.slice(1), old: oldNo++ });
    } else {
      // a context line; an empty one is a blank line whose leading space was stripped
      rows.push({ kind: "ctx", text: line.startsWith(" ") ? line.slice(1) : line, old: oldNo++, new: newNo++ });
    }
  }
  return rows;
}

const DF_BLANK = "\u00a0"; // keeps an empty line one line high

function dfLine(cls, number, sign, text) {
  return dfEl("div", { class: cls }, dfEl("span", { class: "dfw-ln" }, number === undefined ? "" : number),
    sign, text || DF_BLANK);
}

function dfUnified(diff) {
  const box = dfEl("div", { class: "dfw-diff" });
  for (const row of dfDiffRows(diff)) {
    if (row.kind === "meta") continue;
    if (row.kind === "hunk") box.append(dfEl("div", { class: "dfw-hunk" }, row.text));
    else if (row.kind === "add") box.append(dfLine("dfw-add", row.new, "+", row.text));
    else if (row.kind === "del") box.append(dfLine("dfw-del", row.old, "-", row.text));
    else box.append(dfLine("", row.new, " ", row.text));
  }
  return box;
}

// Side by side: removed lines left, added lines right, context on both.
function dfSplit(diff) {
  const left = dfEl("div", { class: "dfw-diff" });
  const right = dfEl("div", { class: "dfw-diff" });
  let dels = [], adds = [];
  const flush = () => {
    const n = Math.max(dels.length, adds.length);
    for (let i = 0; i < n; i += 1) {
      left.append(dels[i] ? dfLine("dfw-del", dels[i].old, "", dels[i].text) : dfEl("div", {}, DF_BLANK));
      right.append(adds[i] ? dfLine("dfw-add", adds[i].new, "", adds[i].text) : dfEl("div", {}, DF_BLANK));
    }
    dels = []; adds = [];
  };
  for (const row of dfDiffRows(diff)) {
    if (row.kind === "meta") continue;
    if (row.kind === "del") { dels.push(row); continue; }
    if (row.kind === "add") { adds.push(row); continue; }
    flush();
    if (row.kind === "hunk") {
      left.append(dfEl("div", { class: "dfw-hunk" }, row.text));
      right.append(dfEl("div", { class: "dfw-hunk" }, row.text));
    } else {
      left.append(dfLine("", row.old, "", row.text));
      right.append(dfLine("", row.new, "", row.text));
    }
  }
  flush();
  return dfEl("div", { class: "dfw-split" }, left, right);
}

function render({ model, el }) {
  const root = dfEl("div", { class: "dfw-root dfw-workspace" });
  el.append(root);
  const draw = () => {
    const changes = model.get("changes") || [];
    const mode = model.get("mode");
    const runKey = model.get("run_id") || "";
    const opened = DF_DIFF_OPEN.get(runKey) || new Map();
    DF_DIFF_OPEN.set(runKey, opened);
    const confirm = model.get("confirm") || "";
    const toggle = dfEl("button", { class: "dfw-btn dfw-mode", onclick: () =>
      model.send({ kind: "mode", mode: mode === "split" ? "unified" : "split" }) },
      mode === "split" ? "Unified view" : "Side-by-side view");
    const header = dfEl("div", { class: "dfw-header" },
      dfEl("span", { class: "dfw-title" }, `Workspace changes (${changes.length})`), toggle);
    const cards = changes.map((c) => {
      const meta = [];
      if (c.status === "modified" && c.old_size !== null && c.old_size !== undefined) meta.push(`${dfSize(c.old_size)} → ${dfSize(c.size)}`);
      else if (c.size !== null && c.size !== undefined) meta.push(dfSize(c.size));
      else if (c.old_size !== null && c.old_size !== undefined) meta.push(`was ${dfSize(c.old_size)}`);
      if (c.binary) meta.push("binary");
      if (c.too_large) meta.push("large");
      if (c.sensitive) meta.push("sensitive: content hidden");
      let actions = null;
      if (c.status !== "deleted") {
        actions = confirm === c.path
          ? dfEl("div", { class: "dfw-actions dfw-confirm" },
            dfEl("span", {}, "A file with this name is already in the notebook folder."),
            dfEl("button", { class: "dfw-btn dfw-primary dfw-overwrite", onclick: (e) => { e.preventDefault(); model.send({ kind: "copy", path: c.path, overwrite: true }); } }, "Overwrite"),
            dfEl("button", { class: "dfw-btn dfw-cancel", onclick: (e) => { e.preventDefault(); model.send({ kind: "cancel" }); } }, "Cancel"))
          : dfEl("div", { class: "dfw-actions" },
            dfEl("button", { class: "dfw-btn dfw-copy", onclick: (e) => { e.preventDefault(); model.send({ kind: "copy", path: c.path }); } },
              "Copy to notebook folder"));
      }
      const body = c.diff
        ? (mode === "split" ? dfSplit(c.diff) : dfUnified(c.diff))
        : dfEl("div", { class: "dfw-help" }, "No text diff (metadata only).");
      const open = opened.has(c.path) ? opened.get(c.path) : changes.length <= 3;
      const card = dfEl("details", { class: "dfw-card dfw-change", "data-path": c.path, open },
        dfEl("summary", {}, dfEl("span", { class: `dfw-badge dfw-badge-${c.status}` }, c.status),
          dfEl("code", {}, c.path), meta.length ? ` (${meta.join(", ")})` : ""),
        body, actions);
      card.addEventListener("toggle", () => opened.set(c.path, card.open));
      return card;
    });
    root.replaceChildren(header, ...(cards.length ? cards : [dfEl("div", { class: "dfw-help" }, "No changes.")]),
      dfEl("div", { class: "dfw-message" }, model.get("message") || ""));
  };
  for (const name of ["changes", "mode", "message", "confirm"]) model.on(`change:${name}`, draw);
  draw();
}

export default { render };
