// The workspace diff widget's view: one collapsible card per changed file.

function dfDiffLine(line) {
  const cls = line.startsWith("+") && !line.startsWith("+++") ? "dfw-add"
    : line.startsWith("-") && !line.startsWith("---") ? "dfw-del"
    : line.startsWith("@@") ? "dfw-hunk" : "";
  return dfEl("div", { class: cls }, line || " ");
}

// Side by side from a unified diff: removed lines left, added lines right, context on both.
function dfSplit(diff) {
  const left = dfEl("div", { class: "dfw-diff" });
  const right = dfEl("div", { class: "dfw-diff" });
  let dels = [], adds = [];
  const flush = () => {
    const n = Math.max(dels.length, adds.length);
    for (let i = 0; i < n; i += 1) {
      left.append(dfEl("div", { class: dels[i] !== undefined ? "dfw-del" : "" }, dels[i] ?? " "));
      right.append(dfEl("div", { class: adds[i] !== undefined ? "dfw-add" : "" }, adds[i] ?? " "));
    }
    dels = []; adds = [];
  };
  for (const line of diff.split("\n")) {
    if (line.startsWith("---") || line.startsWith("+++")) continue;
    if (line.startsWith("-")) dels.push(line.slice(1));
    else if (line.startsWith("+")) adds.push(line.slice(1));
    else {
      flush();
      const cls = line.startsWith("@@") ? "dfw-hunk" : "";
      left.append(dfEl("div", { class: cls }, line.startsWith(" ") ? line.slice(1) : line || " "));
      right.append(dfEl("div", { class: cls }, line.startsWith(" ") ? line.slice(1) : line || " "));
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
    const toggle = dfEl("button", { class: "dfw-btn dfw-mode", onclick: () =>
      model.send({ kind: "mode", mode: mode === "split" ? "unified" : "split" }) },
      mode === "split" ? "Unified view" : "Side-by-side view");
    const header = dfEl("div", { class: "dfw-header" },
      dfEl("span", { class: "dfw-title" }, `Workspace changes (${changes.length})`), toggle);
    const cards = changes.map((c) => {
      const meta = [];
      if (c.size !== null && c.size !== undefined) meta.push(`${c.size} B`);
      if (c.binary) meta.push("binary");
      if (c.too_large) meta.push("large");
      if (c.sensitive) meta.push("sensitive: content hidden");
      const copy = c.status !== "deleted"
        ? dfEl("button", { class: "dfw-btn dfw-copy", onclick: (e) => { e.preventDefault(); model.send({ kind: "copy", path: c.path }); } },
          "Copy to notebook folder")
        : null;
      const body = c.diff
        ? (mode === "split" ? dfSplit(c.diff) : dfEl("div", { class: "dfw-diff" }, c.diff.split("\n").map(dfDiffLine)))
        : dfEl("div", { class: "dfw-help" }, "No text diff (metadata only).");
      return dfEl("details", { class: "dfw-card dfw-change", "data-path": c.path, open: changes.length <= 3 },
        dfEl("summary", {}, dfEl("span", { class: `dfw-badge dfw-badge-${c.status}` }, c.status),
          dfEl("code", {}, c.path), meta.length ? ` (${meta.join(", ")})` : ""),
        body, copy ? dfEl("div", { class: "dfw-actions" }, copy) : null);
    });
    root.replaceChildren(header, ...(cards.length ? cards : [dfEl("div", { class: "dfw-help" }, "No changes.")]),
      dfEl("div", { class: "dfw-message" }, model.get("message") || ""));
  };
  for (const name of ["changes", "mode", "message"]) model.on(`change:${name}`, draw);
  draw();
}

export default { render };
