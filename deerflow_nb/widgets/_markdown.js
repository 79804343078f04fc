// Markdown for the chat: markdown-it (vendor/markdown-it.min.js, CommonMark + GFM tables and
// strikethrough) with Prism highlighting (vendor/prism.min.js) and Temml math (vendor/temml.min.js). Raw HTML in model output is escaped,
// links are checked by markdown-it's validateLink (no javascript:/vbscript:/file: URLs) and open in
// a new tab. An unclosed fence (an answer still streaming) renders as code up to the end.

const DF_MD = markdownit({
  html: false,
  linkify: true,
  typographer: false,
  highlight(code, lang) {
    const name = String(lang || "").trim().toLowerCase().split(/\s+/)[0];
    const alias = { py: "python", sh: "bash", shell: "bash", console: "bash", js: "javascript", yml: "yaml",
      md: "markdown", html: "markup", xml: "markup" }[name] || name;
    const grammar = alias && globalThis.Prism && globalThis.Prism.languages[alias];
    const body = grammar ? globalThis.Prism.highlight(code, grammar, alias) : DF_MD.utils.escapeHtml(code);
    const label = name ? ` data-lang="${DF_MD.utils.escapeHtml(name)}"` : "";
    return `<pre class="dfw-code${alias ? ` language-${DF_MD.utils.escapeHtml(alias)}` : ""}"${label}><code>${body}</code></pre>`;
  },
});

const dfDefaultLinkOpen = DF_MD.renderer.rules.link_open
  || ((tokens, idx, options, env, self) => self.renderToken(tokens, idx, options));
DF_MD.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet("target", "_blank");
  tokens[idx].attrSet("rel", "noopener noreferrer");
  return dfDefaultLinkOpen(tokens, idx, options, env, self);
};
// tables get the widget's table class
DF_MD.renderer.rules.table_open = () => '<table class="dfw-table">\n';

// Math: $…$ and \(…\) inline, $$…$$ and \[…\] as blocks, rendered to MathML by Temml
// (vendor/temml.min.js; browsers draw MathML natively, so no fonts or CSS ship with it). A "$"
// that opens math is followed by a non-space and the one that closes it is preceded by a non-space
// and not followed by a digit, so prices such as "$5 and $10" stay text. Bad TeX shows as code.
function dfMath(tex, display) {
  if (typeof temml === "undefined") return `<code>${DF_MD.utils.escapeHtml(tex)}</code>`;
  try {
    return temml.renderToString(tex, { displayMode: display, throwOnError: true });
  } catch (_) {
    return `<code class="dfw-math-error">${DF_MD.utils.escapeHtml(tex)}</code>`;
  }
}

DF_MD.inline.ruler.before("escape", "df_math_inline", (state, silent) => {
  const src = state.src, start = state.pos;
  let open, close, end;
  if (src.startsWith("\\(", start)) {
    open = 2; end = src.indexOf("\\)", start + 2); close = 2;
  } else if (src[start] === "$" && src[start + 1] !== "$") {
    if (!src[start + 1] || /\s/.test(src[start + 1])) return false;
    open = 1; close = 1; end = start + 1;
    for (;;) {
      end = src.indexOf("$", end);
      if (end < 0) return false;
      if (src[end - 1] !== "\\" && !/\s/.test(src[end - 1]) && !/[0-9]/.test(src[end + 1] || "")) break;
      end += 1;
    }
  } else {
    return false;
  }
  if (end < 0 || end === start + open) return false;
  if (!silent) {
    const token = state.push("df_math", "", 0);
    token.content = src.slice(start + open, end);
  }
  state.pos = end + close;
  return true;
});

DF_MD.block.ruler.before("fence", "df_math_block", (state, startLine, endLine, silent) => {
  const lineText = (n) => state.src.slice(state.bMarks[n] + state.tShift[n], state.eMarks[n]);
  const first = lineText(startLine);
  const delims = first.startsWith("$$") ? ["$$", "$$"] : first.startsWith("\\[") ? ["\\[", "\\]"] : null;
  if (!delims) return false;
  let body = first.slice(2), line = startLine, found = false;
  if (body.trimEnd().endsWith(delims[1]) && body.trim().length >= 2) {
    body = body.trimEnd().slice(0, -2); found = true;
  }
  while (!found && ++line < endLine) {
    const text = lineText(line);
    if (text.trimEnd().endsWith(delims[1])) {
      body += "\n" + text.trimEnd().slice(0, -2); found = true;
    } else {
      body += "\n" + text;
    }
  }
  if (!found) return false;
  if (silent) return true;
  const token = state.push("df_math_block", "", 0);
  token.content = body.trim();
  token.map = [startLine, line + 1];
  state.line = line + 1;
  return true;
});

DF_MD.renderer.rules.df_math = (tokens, idx) => dfMath(tokens[idx].content, false);
DF_MD.renderer.rules.df_math_block = (tokens, idx) => `<div class="dfw-math">${dfMath(tokens[idx].content, true)}</div>\n`;

// Markdown source -> safe HTML.
function dfMarkdown(source) {
  const html = DF_MD.render(String(source || ""));
  // GFM task list items ("- [x] done") as check marks
  return html.replace(/<li>(<p>)?\[([ xX])\]\s+/g, (_, p, mark) => `<li class="dfw-task">${p || ""}${mark === " " ? "☐" : "☑"} `);
}
