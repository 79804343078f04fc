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

// A human-input card. opts: {answered, answerText, error, disabled, onSubmit(answer), onSkip()}.
// Form answers are objects of field values; free text and choices are strings.
function dfRequestCard(request, opts) {
  const card = dfEl("div", { class: "dfw-card dfw-request" + (opts.answered ? " dfw-answered" : "") });
  if (request.context) card.append(dfEl("div", { class: "dfw-context" }, request.context));
  card.append(dfEl("div", { class: "dfw-question" }, request.question || "The agent asks:"));
  if (opts.answered) {
    card.append(dfEl("div", { class: "dfw-answer" }, dfEl("b", {}, "Answered: "), opts.answerText || ""));
    return card;
  }
  if (opts.closed) {  // answered elsewhere (from code, another view): nothing to fill in here
    card.classList.add("dfw-skipped");
    card.append(dfEl("div", { class: "dfw-help" }, opts.closed));
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
    const rows = {};
    // a Python-side rejection ("dataset: is required; rows: not a number") names fields too
    const serverErrors = {};
    for (const part of String(opts.error || "").replace(/^invalid form answer:\s*/, "").split(/;\s*/)) {
      const m = part.match(/^\s*([\w.-]+):\s*(.+)$/);
      if (m && (request.fields || []).some((f) => f.name === m[1])) serverErrors[m[1]] = m[2];
    }
    const refresh = () => {
      const errors = dfValidateForm(request.fields || [], state);
      const tried = !!form.dataset.tried;
      for (const [name, hint] of Object.entries(hints)) {
        const reason = tried ? (errors[name] || "") : (serverErrors[name] || "");
        hint.textContent = reason;
        rows[name].classList.toggle("dfw-field-invalid", !!reason);
        const input = rows[name].querySelector("input, select, textarea");
        if (input) { if (reason) input.setAttribute("aria-invalid", "true"); else input.removeAttribute("aria-invalid"); }
      }
      if (tried) errorBox.textContent = Object.keys(errors).length ? "Please fix the highlighted fields." : "";
      return errors;
    };
    for (const field of request.fields || []) {
      const { input, label } = dfFieldInput(field, state, refresh);
      hints[field.name] = dfEl("div", { class: "dfw-field-error" });
      const row = dfEl("div", { class: `dfw-field dfw-type-${field.type}`, "data-field": field.name });
      rows[field.name] = row;
      if (field.type === "checkbox") row.append(dfEl("div", { class: "dfw-check" }, input, " ", label));
      else row.append(label, input);
      if (field.description) row.append(dfEl("div", { class: "dfw-help" }, field.description));
      row.append(hints[field.name]);
      form.append(row);
    }
    refresh();
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
  const skip = opts.onSkip
    ? dfEl("button", { class: "dfw-btn dfw-skip", type: "button", disabled: !!opts.disabled,
      title: "let the agent go on without this answer", onclick: (e) => { e.preventDefault(); opts.onSkip(); } }, "Skip")
    : null;
  form.append(dfEl("div", { class: "dfw-actions" }, submit, skip), errorBox);
  card.append(form);
  return card;
}

// Copy text to the clipboard; resolves to whether it worked (the Clipboard API needs a secure
// context, so an execCommand fallback covers plain-http servers).
async function dfCopyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) { await navigator.clipboard.writeText(text); return true; }
  } catch (err) { /* fall through to the textarea fallback */ }
  const area = dfEl("textarea", { style: "position:fixed;left:-9999px;top:0", readonly: true });
  area.value = text;
  document.body.append(area);
  area.select();
  let ok = false;
  try { ok = document.execCommand("copy"); } catch (err) { ok = false; }
  area.remove();
  return ok;
}

// A small button that copies `getText()` and says so for a moment.
function dfCopyButton(getText, label) {
  const button = dfEl("button", { class: "dfw-btn dfw-btn-small dfw-copy-btn", type: "button", title: "copy to the clipboard" },
    label || "Copy");
  button.addEventListener("click", async (e) => {
    e.preventDefault();
    e.stopPropagation();
    const ok = await dfCopyText(getText());
    button.textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => { button.textContent = label || "Copy"; }, 1500);
  });
  return button;
}

// Watches that a kernel is still behind this view: the Python side answers {kind: "ping"} with
// {kind: "pong"}. A view restored from a saved notebook (no kernel) or one whose kernel restarted or
// shut down gets no answer; onChange(false) is then called (and onChange(true) when answers resume).
function dfKernelWatch(model, onChange, opts) {
  const o = Object.assign({ first: 4000, every: 10000, grace: 8000 }, opts || {});
  let alive = null;
  let waiting = null;
  const set = (value) => { if (alive !== value) { alive = value; onChange(value); } };
  const onMsg = (msg) => {
    if (msg && msg.kind === "pong") { clearTimeout(waiting); waiting = null; set(true); }
  };
  model.on("msg:custom", onMsg);
  const ping = (grace) => {
    if (waiting) return;
    try { model.send({ kind: "ping" }); } catch (err) { set(false); return; }
    waiting = setTimeout(() => { waiting = null; set(false); }, grace);
  };
  ping(o.first);
  const timer = setInterval(() => ping(o.grace), o.every);
  return { alive: () => alive, stop: () => { clearInterval(timer); clearTimeout(waiting); model.off("msg:custom", onMsg); } };
}
