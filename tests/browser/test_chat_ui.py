"""The chat widget in JupyterLab: a failed tool card, copy buttons, the dark theme, and a saved notebook
reopened after its kernel shut down (the conversation as it ended, in the view and in the file's fallback).

Screenshots go to ``test-artifacts/browser/``; good ones are copied to ``docs/img/``.
"""

from __future__ import annotations

import json
import re

import pytest

from .conftest import snap
from .test_jupyterlab import expect, open_notebook, run_all

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

ANSWER = "The package is missing, so I computed it by hand."
# WCAG contrast of the answer text on the widget's background (4.5 is the AA level for body text)
CONTRAST = """(node) => {
  const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number).map((v) => v / 255)
    .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  const lum = (c) => { const [r, g, b] = rgb(c); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  let bgNode = node; let bg = getComputedStyle(bgNode).backgroundColor;
  while (bgNode && (bg === "rgba(0, 0, 0, 0)" || bg === "transparent")) {
    bgNode = bgNode.parentElement; bg = bgNode ? getComputedStyle(bgNode).backgroundColor : "rgb(255,255,255)";
  }
  const [a, b] = [lum(getComputedStyle(node).color), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def use_theme(page, name: str) -> None:
    page.get_by_role("menuitem", name="Settings", exact=True).click()
    page.locator(".lm-Menu-itemLabel").filter(has_text=re.compile(r"^Theme$")).click()
    page.locator(".lm-Menu-itemLabel").filter(has_text=re.compile(f"^{name}$")).click()


def wait_idle(page) -> None:
    page.wait_for_function("() => { const s = [...document.querySelectorAll('.dfw-chat .dfw-status')];"
                           " return s.length && s.every(x => x.textContent === 'idle'); }", timeout=120_000)


@pytest.mark.parametrize("lab", ["chat_ui"], indirect=True)
def test_failed_tool_copy_dark_theme_and_reopened_after_the_kernel_shut_down(browser_page, lab):
    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=lab.url)
    open_notebook(page, lab, "chat_ui.ipynb")
    run_all(page)
    chat = page.locator(".dfw-chat").first
    tool = chat.locator(".dfw-tool[data-tool='bash']")
    tool.wait_for(timeout=120_000)
    wait_idle(page)
    # the failed command looks failed: its own class, a cross, "failed (exit 1)", not the green dot
    expect(tool).to_have_attribute("data-status", "error")
    expect(tool.locator("summary")).to_contain_text("failed (exit 1)")
    expect(tool.locator(".dfw-dot-success")).to_have_count(0)
    answer = chat.locator(".dfw-assistant").last
    expect(answer).to_contain_text(ANSWER)
    # rendered by markdown-it: the table right after a text line, the nested list, the link, highlighted code
    expect(answer.locator("table.dfw-table tbody tr")).to_have_count(2)
    expect(answer.locator("ol > li")).to_have_count(3)
    expect(answer.locator("ol > li > ul > li")).to_have_count(2)
    expect(answer.locator("a[target='_blank']")).to_have_attribute("href", "https://pandas.pydata.org/docs/")
    expect(answer.locator(".dfw-code .token.keyword").first).to_be_visible()
    snap(chat, "chat_failed_tool_light.png")

    # copy the answer and a code block
    answer.get_by_role("button", name="Copy answer").click()
    answer.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()").startswith(ANSWER)
    answer.locator(".dfw-codebox").get_by_role("button", name="Use in notebook").click()
    answer.locator(".dfw-use-note").filter(has_text="Esc, B, then Ctrl+V").wait_for()
    assert page.evaluate("navigator.clipboard.readText()").startswith("import pandas as pd")

    # dark theme: the answer, the failed card and the user's bubble stay readable
    use_theme(page, "JupyterLab Dark")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.wait_for_timeout(1000)
    for node in (answer.locator("p").first, tool.locator("summary"), chat.locator(".dfw-user").first):
        assert node.evaluate(CONTRAST) >= 4.5
    snap(chat, "chat_failed_tool_dark.png")
    use_theme(page, "JupyterLab Light")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'")

    # save, shut the kernel down, close the notebook and open it again without a kernel
    page.keyboard.press("Control+s")
    page.wait_for_timeout(2000)
    page.get_by_role("menuitem", name="Kernel", exact=True).click()
    page.get_by_role("menuitem", name=re.compile(r"^Shut Down Kernel")).click()
    page.locator("#jp-main-statusbar").filter(has_text=re.compile(r"No Kernel|Kernel status: Unknown")).first.wait_for()
    saved = json.loads((lab.root / "chat_ui.ipynb").read_text())
    [output] = saved["cells"][2]["outputs"]
    # the file's fallback is the conversation as it ended, not a snapshot from the first display
    assert ANSWER in "".join(output["data"]["text/markdown"])
    assert "<table>" in "".join(output["data"]["text/html"])
    page.goto(f"{lab.url}/lab/tree/chat_ui.ipynb?token={lab.token}")
    dialog = page.locator(".jp-Dialog").filter(has_text="Select Kernel")
    try:
        dialog.wait_for(timeout=15_000)
        dialog.get_by_role("button", name="No Kernel").click()
    except Exception:  # opened without asking
        pass
    reopened = page.locator(".dfw-chat").first
    reopened.locator(".dfw-assistant").last.wait_for(timeout=60_000)
    assert ANSWER in reopened.inner_text()
    assert "Error displaying widget" not in page.locator(".jp-NotebookPanel").first.inner_text()
    reopened.locator(".dfw-notice").filter(has_text="Not connected to a kernel").wait_for(timeout=30_000)
    expect(reopened.locator(".dfw-send")).to_be_disabled()
    snap(reopened, "chat_reopened_without_kernel.png")
