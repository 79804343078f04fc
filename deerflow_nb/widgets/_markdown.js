// Markdown for the chat: markdown-it (vendor/markdown-it.min.js, CommonMark + GFM tables and
// strikethrough) with Prism highlighting (vendor/prism.min.js). Raw HTML in model output is escaped,
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

// Markdown source -> safe HTML.
function dfMarkdown(source) {
  const html = DF_MD.render(String(source || ""));
  // GFM task list items ("- [x] done") as check marks
  return html.replace(/<li>(<p>)?\[([ xX])\]\s+/g, (_, p, mark) => `<li class="dfw-task">${p || ""}${mark === " " ? "☐" : "☑"} `);
}
