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

// "1.5 KiB" / "300 B"; "" for an unknown size.
function dfSize(bytes) {
  if (bytes === null || bytes === undefined) return "";
  return bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${bytes} B`;
}

function dfEscape(text) {
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
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
// opts.draft, an object the caller keeps across redraws, holds what the user has entered so far: a card
// redrawn while it is being filled in (the kernel went quiet, the run's status changed) keeps the values.
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
  const draft = opts.draft || {};
  if (request.mode === "form") {
    const state = draft.values || (draft.values = {});
    const hints = {};
    for (const field of request.fields || []) {
      if (field.name in state) continue;  // entered before this redraw
      if (field.default !== undefined) state[field.name] = field.default;
      else if (field.type === "multi_select") state[field.name] = [];
    }
    if (draft.tried) form.dataset.tried = "1";
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
      draft.tried = true;
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
    let chosen = draft.chosen || "";
    const text = dfEl("textarea", { rows: 2, class: "dfw-free", placeholder: request.mode === "choice_with_other" ? "Or type another answer…" : "Your answer…" });
    text.value = draft.text || "";
    const options = dfEl("div", { class: "dfw-choices" });
    const markChosen = () => { for (const b of options.children) b.classList.toggle("dfw-chosen", b.value === chosen); };
    if (request.mode === "choice_with_other") {
      for (const option of request.options || []) {
        options.append(dfEl("button", { type: "button", class: "dfw-btn dfw-choice", value: option, onclick: () => {
          chosen = draft.chosen = option;
          text.value = draft.text = "";
          markChosen();
        } }, option));
      }
      markChosen();
      form.append(options);
    }
    text.addEventListener("input", () => {
      draft.text = text.value;
      if (text.value) { chosen = draft.chosen = ""; markChosen(); }
    });
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
