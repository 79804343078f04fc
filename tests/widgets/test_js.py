"""The widgets' plain JavaScript, run under Node (no browser): Markdown rendering and form validation."""

import json
import shutil
import subprocess
from importlib import resources

import pytest

from deerflow_nb.widgets._base import load_esm

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def run_js(expression: str):
    common = resources.files("deerflow_nb.widgets").joinpath("_common.js").read_text("utf-8")
    script = (
        "const vm = require('vm'); const ctx = {}; vm.createContext(ctx);\n"
        f"vm.runInContext({json.dumps(common)}, ctx);\n"
        f"process.stdout.write(JSON.stringify(vm.runInContext({json.dumps(expression)}, ctx)));\n"
    )
    out = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60, check=True)
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
    assert '<table class="dfw-table"><thead><tr><th>a</th><th>b</th></tr></thead>' in html
    assert "<td>1</td><td>2</td>" in html
    assert "<li>one</li>" in html and "☑ done" in html
    assert "print(&#39;&lt;hi&gt;&#39;)" in html and 'data-lang="python"' in html
    assert '<a href="https://example.org"' in html and 'href="javascript' not in html


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
        assert "export default { render }" in esm and "function dfMarkdown" in esm
        # no network fetches at runtime: the browser may have none
        assert "http://" not in esm.replace("https://example", "") and "import(" not in esm
