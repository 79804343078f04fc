"""The chat's real Markdown renderer (vendored markdown-it + Prism) under Node, over typical LLM answers."""

import json
import re

import pytest

from .test_js import NODE, run_js

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

CORPUS = {
    "table right after a line of text": (
        "Here are the totals per region:\n| region | revenue |\n|:---|---:|\n| East | 491.00 |\n| West | 344.25 |",
        ["<p>Here are the totals per region:</p>", '<table class="dfw-table">', '<th style="text-align:left">region</th>',
         '<td style="text-align:right">491.00</td>'],
        ["| East |"]),
    "nested lists keep their numbering": (
        "Steps:\n\n1. Load the data\n   - read `sales.csv`\n   - check the columns\n2. Group by region\n3. Sum it",
        ["<ol>", "<ul>", "<li>read <code>sales.csv</code></li>", "<li>Group by region</li>", "<li>Sum it</li>"],
        ["<li>check the columns</li>\n<li>Group"]),  # the nested items stay nested, not renumbered
    "links, autolinks and images": (
        "See [the docs](https://pandas.pydata.org/docs/) or https://example.org, and ![chart](https://example.org/c.png)."
        " Not [this](javascript:alert(1)).",
        ['<a href="https://pandas.pydata.org/docs/" target="_blank" rel="noopener noreferrer">the docs</a>',
         '<a href="https://example.org" target="_blank"', '<img src="https://example.org/c.png" alt="chart">'],
        ['href="javascript:']),
    "code blocks with a language": (
        "Run this:\n\n```python\nimport pandas as pd\ndf = pd.read_csv('sales.csv')  # load\n```\n\n```bash\nls -la\n```",
        ['data-lang="python"', '<span class="token keyword">import</span>', '<span class="token comment"># load</span>',
         'data-lang="bash"'],
        []),
    "emphasis styles": (
        "This is _italic_, *also italic*, **bold**, __bold too__ and ~~gone~~.",
        ["<em>italic</em>", "<em>also italic</em>", "<strong>bold</strong>", "<strong>bold too</strong>", "<s>gone</s>"],
        []),
    "raw html is escaped": (
        "<img src=x onerror=alert(1)> and <script>alert(2)</script>",
        ["&lt;img src=x onerror=alert(1)&gt;", "&lt;script&gt;"],
        ["<script>", "<img src=x"]),
    "headings, quotes, rules and task lists": (
        "## Result\n\n> Note: estimates.\n\n---\n\n- [x] loaded\n- [ ] plotted",
        ["<h2>Result</h2>", "<blockquote>", "<hr>", "☑ loaded", "☐ plotted"],
        []),
    "math inline and as blocks, prices stay text": (
        "The mean is $\\bar{x} = \\frac{1}{n}\\sum x_i$, or \\(\\sigma^2\\); it cost $5 and $10.\n\n$$\ny = ax + b\n$$",
        ['<math', "<mfrac>", '<div class="dfw-math"><math', 'display="block"', "it cost $5 and $10."],
        ["$\\bar", "\\frac"]),
    "bad math shows as code": (
        "Broken: $\\frac{1}{$ here",
        ['<code class="dfw-math-error">\\frac{1}{</code>'],
        ["<math"]),
    "an answer still streaming": (
        "Partial:\n\n```python\nfor row in rows:\n    print(row",
        ["<pre", "print</span>", "row</code></pre>"],
        []),
}


@pytest.mark.parametrize("name", list(CORPUS))
def test_typical_answers_render(name):
    source, present, absent = CORPUS[name]
    html = run_js(f"dfMarkdown({json.dumps(source)})")
    for fragment in present:
        assert fragment in html, f"{name}: {fragment!r} missing from\n{html}"
    for fragment in absent:
        assert fragment not in html, f"{name}: {fragment!r} present in\n{html}"


def test_nested_list_structure():
    html = run_js('dfMarkdown("1. a\\n   1. a1\\n   2. a2\\n2. b\\n3. c")')
    outer = re.sub(r"<ol>\s*<li>a1</li>\s*<li>a2</li>\s*</ol>", "", html)  # drop the inner list
    assert outer.count("<li>") == 3 and "a1" in html
