"""The widgets' plain JavaScript, run under Node (no browser): Markdown rendering and form validation."""

import json
import re
import shutil
import subprocess
from importlib import resources

import pytest

from deerflow_nb.widgets._base import load_esm
from deerflow_nb.widgets.chat import ChatWidget

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


SOURCES = ("vendor/markdown-it.min.js", "vendor/prism.min.js", "vendor/temml.min.js", "_markdown.js", "_common.js")


def run_js(expression: str):
    """Evaluate ``expression`` under Node with the chat's real renderer and helpers loaded (as in the browser)."""
    folder = resources.files("deerflow_nb.widgets")
    code = "\n".join(folder.joinpath(name).read_text("utf-8") for name in SOURCES)
    script = (
        "const vm = require('vm'); const ctx = {}; ctx.globalThis = ctx; vm.createContext(ctx);\n"
        f"vm.runInContext({json.dumps(code)}, ctx);\n"
        f"process.stdout.write(JSON.stringify(vm.runInContext({json.dumps(expression)}, ctx)));\n"
    )
    out = subprocess.run([NODE, "-"], input=script, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_markdown_renders_blocks_and_escapes_html():
    html = run_js(r"""dfMarkdown([
      "# Title", "Some **bold** and `code <b>` text with <script>alert(1)</script>.", "",
      "| a | b |", "|---|---:|", "| 1 | 2 |", "",
      "- one", "- [x] done", "", "```python", "print('<hi>')", "```",
      "[link](https://example.org) [bad](javascript:alert(1))"].join("\n"))""")
    assert "<h1>Title</h1>" in html
    assert "<strong>bold</strong>" in html and "<code>code &lt;b&gt;</code>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert '<table class="dfw-table">' in html and '<th style="text-align:right">b</th>' in html
    assert '<td>1</td>\n<td style="text-align:right">2</td>' in html
    assert "<li>one</li>" in html and "☑ done" in html
    assert 'data-lang="python"' in html and "&lt;hi" in html and "<hi>" not in html and 'class="token string"' in html
    assert '<a href="https://example.org" target="_blank"' in html and 'href="javascript' not in html


def test_unclosed_fence_while_streaming_renders_as_code():
    html = run_js(r"""dfMarkdown("Here:\n```\nx = 1\ny = 2")""")
    assert "<pre" in html and "x = 1\ny = 2" in html


def test_browser_validation_mirrors_python():
    fields = [
        {"name": "dataset", "type": "select", "required": True, "options": ["a.csv"]},
        {"name": "rows", "type": "number"},
        {"name": "start", "type": "date"},
        {"name": "agree", "type": "checkbox", "required": True},
        {"name": "tags", "type": "multi_select", "required": True, "options": ["x"]},
    ]
    errors = run_js(f"dfValidateForm({json.dumps(fields)}, {{rows: 'abc', start: '1/2/2024', tags: []}})")
    assert errors == {"dataset": "is required", "rows": "not a number", "start": "expected a date as YYYY-MM-DD",
                      "agree": "must be agreed to", "tags": "is required"}
    ok = run_js(f"dfValidateForm({json.dumps(fields)}, "
                "{dataset: 'a.csv', rows: '3', start: '2024-01-02', agree: true, tags: ['x']})")
    assert ok == {}


def test_each_widget_module_has_a_default_export_and_the_helpers():
    for name in ("chat.js", "human_input.js", "workspace_diff.js"):
        esm = load_esm("_common.js", name)
        assert "export default { render }" in esm and "function dfEl" in esm
        # no network fetches at runtime: the browser may have none
        assert "http://" not in esm.replace("https://example", "") and "import(" not in esm
    chat = ChatWidget._esm if isinstance(ChatWidget._esm, str) else str(ChatWidget._esm)
    assert "function dfMarkdown" in chat and "markdownit" in chat and "temml" in chat
    # no call of the global fetch() (Temml's lexer defines and calls a fetch() method of its own)
    assert not re.search(r"(?<![.\w])fetch\((?!\)\{)", chat)
