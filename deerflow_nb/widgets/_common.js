// Shared helpers of the deerflow widgets, prepended to each widget's ESM by its Python class
// (anywidget loads one module per widget, without a bundler, so helpers are concatenated).
// Nothing here fetches from the network: the browser may have none.

function dfEl(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function dfEscape(text) {
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

// Inline Markdown on already-escaped text: code spans first (their content is left alone).
function dfInline(escaped) {
  const spans = [];
  let text = escaped.replace(/`([^`]+)`/g, (_, code) => {
    spans.push(`<code>${code}</code>`);
    return `\u0000${spans.length - 1}\u0000`;
  });
  text = text
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/__([^_]+)__/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>")
    .replace(/~~([^~]+)~~/g, "<del>$1</del>")
    // only http(s) links; the URL was escaped with the rest of the text
    .replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g,
      '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
  return text.replace(/\u0000(\d+)\u0000/g, (_, i) => spans[Number(i)]);
}

function dfTableRow(line) {
  let body = line.trim();
  if (body.startsWith("|")) body = body.slice(1);
  if (body.endsWith("|")) body = body.slice(0, -1);
  return body.split("|").map((cell) => cell.trim());
}

// A small Markdown renderer: headings, paragraphs, lists, quotes, rules, fenced code and
// pipe tables. Input is escaped before any tag is produced, so model output cannot inject HTML.
// An unclosed fence (text still streaming) renders as code up to the end.
function dfMarkdown(source) {
  const lines = String(source || "").replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let i = 0;
  const isBlockStart = (line) => /^(#{1,6}\s|```|>|\s*([-*+]|\d+[.)])\s|\s*(---|\*\*\*|___)\s*$)/.test(line);
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^```\s*([\w+-]*)/);
    if (fence) {
      const code = [];
      i += 1;
      while (i < lines.length && !/^```\s*$/.test(lines[i])) code.push(lines[i++]);
      i += 1;
      const lang = fence[1] ? ` data-lang="${dfEscape(fence[1])}"` : "";
      out.push(`<pre class="dfw-code"${lang}><code>${dfEscape(code.join("\n"))}</code></pre>`);
      continue;
    }
    if (!line.trim()) { i += 1; continue; }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      const level = heading[1].length;
      out.push(`<h${level}>${dfInline(dfEscape(heading[2]))}</h${level}>`);
      i += 1;
      continue;
    }
    if (/^\s*(---|\*\*\*|___)\s*$/.test(line)) { out.push("<hr>"); i += 1; continue; }
    if (line.includes("|") && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(lines[i + 1])) {
      const head = dfTableRow(line);
      i += 2;
      const rows = [];
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) rows.push(dfTableRow(lines[i++]));
      const th = head.map((c) => `<th>${dfInline(dfEscape(c))}</th>`).join("");
      const tr = rows.map((r) => `<tr>${r.map((c) => `<td>${dfInline(dfEscape(c))}</td>`).join("")}</tr>`).join("");
      out.push(`<table class="dfw-table"><thead><tr>${th}</tr></thead><tbody>${tr}</tbody></table>`);
      continue;
    }
    if (/^>/.test(line)) {
      const quote = [];
      while (i < lines.length && /^>/.test(lines[i])) quote.push(lines[i++].replace(/^>\s?/, ""));
      out.push(`<blockquote>${dfMarkdown(quote.join("\n"))}</blockquote>`);
      continue;
    }
    const bullet = line.match(/^\s*([-*+]|\d+[.)])\s+/);
    if (bullet) {
      const ordered = /\d/.test(bullet[1]);
      const items = [];
      while (i < lines.length) {
        const m = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
        if (m) { items.push(m[2]); i += 1; }
        else if (lines[i].trim() && /^\s{2,}/.test(lines[i]) && items.length) { items[items.length - 1] += " " + lines[i].trim(); i += 1; }
        else break;
      }
      const tag = ordered ? "ol" : "ul";
      const lis = items.map((t) => {
        const box = t.match(/^\[([ xX])\]\s+(.*)$/);
        if (box) return `<li class="dfw-task">${box[1] === " " ? "☐" : "☑"} ${dfInline(dfEscape(box[2]))}</li>`;
        return `<li>${dfInline(dfEscape(t))}</li>`;
      }).join("");
      out.push(`<${tag}>${lis}</${tag}>`);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !(para.length && isBlockStart(lines[i]))) para.push(lines[i++]);
    out.push(`<p>${dfInline(dfEscape(para.join("\n"))).replace(/\n/g, "<br>")}</p>`);
  }
  return out.join("\n");
}

// Browser-side validation; mirrors deerflow_nb.agent.human_input.validate_form_answer.
function dfValidateForm(fields, values) {
  const errors = {};
  for (const field of fields) {
    const value = values[field.name];
    const empty = value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length);
    if (field.type === "checkbox") {
      if (field.required && !value) errors[field.name] = "must be agreed to";
    } else if (field.required && empty) {
      errors[field.name] = "is required";
    } else if (!empty && field.type === "number" && !Number.isFinite(Number(value))) {
      errors[field.name] = "not a number";
    } else if (!empty && field.type === "date" && !/^\d{4}-\d{2}-\d{2}$/.test(String(value))) {
      errors[field.name] = "expected a date as YYYY-MM-DD";
    } else if (!empty && field.type === "select" && !(field.options || []).includes(value)) {
      errors[field.name] = "not an option";
    }
  }
  return errors;
}

function dfFieldInput(field, state, onChange) {
  const id = `dfw-${Math.random().toString(36).slice(2)}-${field.name}`;
  const set = (value) => { state[field.name] = value; onChange(); };
  let input;
  switch (field.type) {
    case "textarea":
      input = dfEl("textarea", { id, rows: 3, placeholder: field.placeholder, oninput: (e) => set(e.target.value) });
      input.value = state[field.name] ?? "";
      break;
    case "select":
      input = dfEl("select", { id, onchange: (e) => set(e.target.value) },
        dfEl("option", { value: "" }, field.placeholder || "— choose —"),
        (field.options || []).map((o) => dfEl("option", { value: o, selected: state[field.name] === o }, o)));
      break;
    case "multi_select":
      input = dfEl("div", { id, class: "dfw-multi" }, (field.options || []).map((o) => {
        const box = dfEl("input", { type: "checkbox", value: o, checked: (state[field.name] || []).includes(o),
          onchange: (e) => {
            const chosen = new Set(state[field.name] || []);
            if (e.target.checked) chosen.add(o); else chosen.delete(o);
            set((field.options || []).filter((x) => chosen.has(x)));
          } });
        return dfEl("label", { class: "dfw-option" }, box, " ", o);
      }));
      break;
    case "checkbox":
      input = dfEl("input", { id, type: "checkbox", checked: !!state[field.name], onchange: (e) => set(e.target.checked) });
      break;
    default:
      input = dfEl("input", { id, type: field.type === "number" ? "number" : field.type === "date" ? "date" : "text",
        placeholder: field.placeholder, oninput: (e) => set(e.target.value) });
      input.value = state[field.name] ?? "";
  }
  input.setAttribute("name", field.name);
  const label = dfEl("label", { for: id, class: "dfw-label" }, field.label || field.name,
    field.required ? dfEl("span", { class: "dfw-required", title: "required" }, " *") : null);
  return { input, label };
}

// A human-input card. opts: {answered, answerText, error, disabled, onSubmit(answer)}.
// Form answers are objects of field values; free text and choices are strings.
function dfRequestCard(request, opts) {
  const card = dfEl("div", { class: "dfw-card dfw-request" + (opts.answered ? " dfw-answered" : "") });
  if (request.context) card.append(dfEl("div", { class: "dfw-context" }, request.context));
  card.append(dfEl("div", { class: "dfw-question" }, request.question || "The agent asks:"));
  if (opts.answered) {
    card.append(dfEl("div", { class: "dfw-answer" }, dfEl("b", {}, "Answered: "), opts.answerText || ""));
    return card;
  }
  const errorBox = dfEl("div", { class: "dfw-form-error" }, opts.error || "");
  const submit = dfEl("button", { class: "dfw-btn dfw-primary", type: "submit", disabled: !!opts.disabled }, "Submit");
  const form = dfEl("form", { class: "dfw-form", novalidate: true });
  if (request.mode === "form") {
    const state = {};
    const hints = {};
    for (const field of request.fields || []) {
      if (field.default !== undefined) state[field.name] = field.default;
      else if (field.type === "multi_select") state[field.name] = [];
    }
    const refresh = () => {
      const errors = dfValidateForm(request.fields || [], state);
      const tried = !!form.dataset.tried;
      for (const [name, hint] of Object.entries(hints)) hint.textContent = tried ? (errors[name] || "") : "";
      if (tried) errorBox.textContent = Object.keys(errors).length ? "Please fix the highlighted fields." : "";
      return errors;
    };
    for (const field of request.fields || []) {
      const { input, label } = dfFieldInput(field, state, refresh);
      hints[field.name] = dfEl("div", { class: "dfw-field-error" });
      const row = dfEl("div", { class: `dfw-field dfw-type-${field.type}` });
      if (field.type === "checkbox") row.append(dfEl("div", { class: "dfw-check" }, input, " ", label));
      else row.append(label, input);
      if (field.description) row.append(dfEl("div", { class: "dfw-help" }, field.description));
      row.append(hints[field.name]);
      form.append(row);
    }
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      form.dataset.tried = "1";
      if (Object.keys(refresh()).length) return;
      const answer = {};
      for (const field of request.fields || []) {
        let value = state[field.name];
        if (field.type === "number" && value !== undefined && value !== "") value = Number(value);
        if (value !== undefined && value !== "") answer[field.name] = value;
      }
      opts.onSubmit(answer);
    });
  } else {
    let chosen = "";
    const text = dfEl("textarea", { rows: 2, class: "dfw-free", placeholder: request.mode === "choice_with_other" ? "Or type another answer…" : "Your answer…" });
    if (request.mode === "choice_with_other") {
      const options = dfEl("div", { class: "dfw-choices" });
      for (const option of request.options || []) {
        const button = dfEl("button", { type: "button", class: "dfw-btn dfw-choice", onclick: () => {
          chosen = option;
          text.value = "";
          for (const b of options.children) b.classList.toggle("dfw-chosen", b === button);
        } }, option);
        options.append(button);
      }
      form.append(options);
    }
    text.addEventListener("input", () => { if (text.value) chosen = ""; });
    form.append(text);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const answer = (text.value || chosen).trim();
      if (!answer) { errorBox.textContent = "Please answer before submitting."; return; }
      errorBox.textContent = "";
      opts.onSubmit(answer);
    });
  }
  form.append(dfEl("div", { class: "dfw-actions" }, submit), errorBox);
  card.append(form);
  return card;
}

const DF_STYLE = `
.dfw-root { font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: var(--jp-content-font-size1, 14px);
  color: var(--jp-content-font-color1, #222); border: 1px solid var(--jp-border-color2, #ddd); border-radius: 8px;
  padding: 8px 12px; max-width: 960px; background: var(--jp-layout-color0, #fff); }
.dfw-header { display: flex; gap: 8px; align-items: center; border-bottom: 1px solid var(--jp-border-color2, #eee);
  padding-bottom: 6px; margin-bottom: 6px; }
.dfw-title { font-weight: 600; flex: 1; }
.dfw-status { font-size: 12px; padding: 1px 8px; border-radius: 10px; background: var(--jp-layout-color2, #eee); }
.dfw-status-running { background: #dbeafe; } .dfw-status-error { background: #fee2e2; }
.dfw-status-waiting { background: #fef3c7; }
.dfw-usage { font-size: 12px; color: var(--jp-content-font-color2, #666); }
.dfw-msg { margin: 6px 0; line-height: 1.45; }
.dfw-user { background: var(--jp-layout-color2, #f1f5f9); border-radius: 8px; padding: 6px 10px; white-space: pre-wrap; }
.dfw-assistant p, .dfw-md p { margin: 4px 0; }
.dfw-code { background: var(--jp-cell-editor-background, #f6f8fa); padding: 8px; border-radius: 6px; overflow-x: auto; }
.dfw-table { border-collapse: collapse; margin: 6px 0; font-size: 13px; }
.dfw-table th, .dfw-table td { border: 1px solid var(--jp-border-color2, #ddd); padding: 2px 8px; text-align: left; }
.dfw-card { border: 1px solid var(--jp-border-color2, #ddd); border-radius: 6px; margin: 6px 0; padding: 4px 8px; }
.dfw-card summary { cursor: pointer; }
.dfw-card pre { white-space: pre-wrap; max-height: 240px; overflow: auto; margin: 4px 0; font-size: 12px; }
.dfw-tool-error { border-color: #f87171; }
.dfw-request { border-color: #f59e0b; background: #fffbeb; }
.dfw-answered { border-color: #10b981; background: #ecfdf5; }
.dfw-question { font-weight: 600; margin: 4px 0; }
.dfw-answer { white-space: pre-wrap; }
.dfw-dot { font-size: 10px; vertical-align: middle; } .dfw-dot-running { color: #2563eb; }
.dfw-dot-success { color: #16a34a; } .dfw-dot-error { color: #dc2626; }
.dfw-file-head { margin: 2px 0 4px; }
.dfw-context { color: var(--jp-content-font-color2, #555); font-size: 13px; }
.dfw-field { margin: 6px 0; display: flex; flex-direction: column; gap: 2px; }
.dfw-field input[type=text], .dfw-field input[type=number], .dfw-field input[type=date], .dfw-field select,
.dfw-field textarea, .dfw-free, .dfw-input textarea { font: inherit; padding: 4px; max-width: 100%; box-sizing: border-box; }
.dfw-label { font-weight: 500; } .dfw-required { color: #dc2626; }
.dfw-help { font-size: 12px; color: var(--jp-content-font-color2, #666); }
.dfw-field-error, .dfw-form-error { color: #dc2626; font-size: 12px; min-height: 0; }
.dfw-choices { display: flex; flex-wrap: wrap; gap: 4px; margin: 4px 0; }
.dfw-btn { font: inherit; padding: 3px 10px; border-radius: 6px; border: 1px solid var(--jp-border-color1, #bbb);
  background: var(--jp-layout-color1, #fff); cursor: pointer; }
.dfw-btn:disabled { opacity: .5; cursor: default; }
.dfw-primary { background: #2563eb; color: #fff; border-color: #2563eb; }
.dfw-chosen { background: #dbeafe; border-color: #2563eb; }
.dfw-actions { margin-top: 6px; display: flex; gap: 6px; }
.dfw-input { display: flex; gap: 6px; margin-top: 8px; } .dfw-input textarea { flex: 1; }
.dfw-todos { margin: 4px 0; font-size: 13px; } .dfw-todo-completed { text-decoration: line-through; color: #888; }
.dfw-error { color: #b91c1c; background: #fef2f2; border-radius: 6px; padding: 4px 8px; }
.dfw-files { display: flex; flex-direction: column; gap: 6px; margin-top: 6px; }
.dfw-file img { max-width: 100%; max-height: 420px; }
.dfw-diff { font-family: var(--jp-code-font-family, monospace); font-size: 12px; white-space: pre; overflow-x: auto; }
.dfw-add { background: #e6ffed; } .dfw-del { background: #ffeef0; } .dfw-hunk { color: #6b7280; }
.dfw-split { display: grid; grid-template-columns: 1fr 1fr; gap: 4px; }
.dfw-badge { font-size: 11px; padding: 0 6px; border-radius: 8px; margin-right: 6px; }
.dfw-badge-added { background: #d1fae5; } .dfw-badge-modified { background: #dbeafe; } .dfw-badge-deleted { background: #fee2e2; }
`;

function dfStyle(el) {
  el.append(dfEl("style", {}, DF_STYLE));
}
