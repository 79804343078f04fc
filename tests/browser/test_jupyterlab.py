"""JupyterLab in headless Chromium: the chat widget streams and renders; a form card is submitted.

Screenshots go to ``test-artifacts/browser/`` (git-ignored); good ones are copied to ``docs/img/``.
"""

from __future__ import annotations

import re

import pytest

from .conftest import snap

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]


def open_notebook(page, lab, name: str) -> None:
    page.goto(lab.notebook_url(name))
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for()
    # JupyterLab may ask which kernel to start: take the notebook's own (python3)
    dialog = page.locator(".jp-Dialog").filter(has_text="Select Kernel")
    try:
        dialog.wait_for(timeout=15_000)
        dialog.get_by_role("button", name="Select", exact=True).click()
    except Exception:  # no dialog: the kernel was started directly
        pass
    page.locator("#jp-main-statusbar").filter(has_text=re.compile(r"Python 3 \(ipykernel\) \| Idle")).wait_for(
        timeout=90_000)


def run_all(page) -> None:
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name=re.compile(r"^Run All Cells")).click()


@pytest.mark.parametrize("lab", ["01_quickstart"], indirect=True)
def test_quickstart_streams_the_answer_into_the_chat_widget(browser_page, lab):
    page = browser_page
    open_notebook(page, lab, "01_quickstart.ipynb")
    run_all(page)
    chats = page.locator(".dfw-chat")
    # the history widget: tool cards, the Markdown answer and the presented report
    history = chats.nth(0)
    history.locator(".dfw-tool[data-tool='bash']").wait_for(timeout=120_000)
    assert history.locator(".dfw-tool").count() == 4
    history.locator(".dfw-file[data-path$='sales_report.md'] table").first.wait_for()
    # the follow-up streamed into the second widget and is rendered as Markdown (bold + a table)
    follow = chats.nth(1)
    answer = follow.locator(".dfw-assistant").last
    answer.locator("table.dfw-table").wait_for(timeout=120_000)  # rendered while streaming
    # then the run ends and the final text is complete
    page.wait_for_function("() => [...document.querySelectorAll('.dfw-chat .dfw-status')]"
                           ".every(s => s.textContent === 'idle')", timeout=120_000)
    # the last message is redrawn after idle (its controls change, the output is re-displayed for the saved
    # file): expect() retries until the final text is there instead of sampling a node being replaced
    final = follow.locator(".dfw-assistant").filter(has_text="earned the most: 491.00").last
    expect(final.locator("strong").first).to_have_text("East", timeout=60_000)
    expect(final.locator("td").filter(has_text="28.7%")).to_have_count(1)
    expect(final.locator("tbody tr")).to_have_count(4)
    follow.scroll_into_view_if_needed()
    snap(follow, "chat_streamed_answer.png")
    snap(history, "chat_tools_and_report.png")
    # tool cards expand to show arguments and results
    bash = history.locator(".dfw-tool[data-tool='bash']")
    bash.locator("summary").click()
    assert "revenue total: 1711.25" in bash.inner_text()
    snap(bash, "chat_tool_card.png")


@pytest.mark.parametrize("lab", ["02_human_in_the_loop"], indirect=True)
def test_form_card_is_filled_in_and_the_agent_continues(browser_page, lab):
    page = browser_page
    open_notebook(page, lab, "02_human_in_the_loop.ipynb")
    page.locator(".jp-Cell").first.click()
    for _ in range(5):  # run up to the cell that waits for the question, not the one that answers it
        page.keyboard.press("Shift+Enter")
    card = page.locator(".dfw-chat .dfw-request").first
    card.locator("form").wait_for(timeout=120_000)
    expect(card).to_contain_text("How should I prepare the sales summary?")
    expect(card.locator(".dfw-required")).to_have_count(3)  # region, metric and the must-agree checkbox
    # browser-side validation: submitting without the required values shows the errors
    card.get_by_role("button", name="Submit").click()
    expect(card).to_contain_text("Please fix the highlighted fields.")
    expect(card).to_contain_text("must be agreed to")
    # each invalid field is highlighted with its reason (region has a default, so it is valid)
    invalid = card.locator(".dfw-field-invalid")
    assert sorted(invalid.evaluate_all("rows => rows.map(r => r.dataset.field)")) == ["confirm", "metric"]
    expect(card.locator("[data-field='metric'] .dfw-field-error")).to_have_text("is required")
    expect(card.get_by_role("button", name="Skip")).to_have_count(1)
    snap(card, "form_card_invalid.png")
    card.locator("select[name='region']").select_option("North")
    card.locator("select[name='metric']").select_option("revenue")
    card.locator("textarea[name='notes']").fill("Round to two decimals.")
    card.locator("input[name='confirm']").check()
    expect(card).not_to_contain_text("Please fix")  # the message goes once the fields are valid
    expect(card.locator(".dfw-field-invalid")).to_have_count(0)
    snap(card, "form_card_filled.png")
    card.get_by_role("button", name="Submit").click()
    chat = page.locator(".dfw-chat").first
    answer = chat.locator(".dfw-assistant").last
    answer.filter(has_text="Thanks! Here is the revenue summary").wait_for(timeout=120_000)
    answered = chat.locator(".dfw-request.dfw-answered")
    expect(answered).to_contain_text("Region: North", timeout=60_000)
    expect(answered).to_contain_text("Anything else?: Round to two decimals.")
    page.wait_for_function("() => document.querySelector('.dfw-chat .dfw-status').textContent === 'idle'")
    snap(chat, "form_card_answered.png")
