"""``agent.ui()`` in JupyterLab: the status line while an answer streams, the thread list (rename, open) and
the model picker, and the side-by-side diff with blank lines and a deleted ``--`` line.

Screenshots go to ``test-artifacts/browser/``; good ones are copied to ``docs/img/``.
"""

from __future__ import annotations

import re

import pytest

from .conftest import snap
from .test_chat_ui import wait_idle
from .test_jupyterlab import expect, open_notebook, run_all

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]


@pytest.mark.parametrize("lab", ["chat_threads"], indirect=True)
def test_progress_thread_list_model_picker_and_diff(browser_page, lab):
    page = browser_page
    open_notebook(page, lab, "chat_threads.ipynb")
    run_all(page)
    chat = page.locator(".dfw-chat").first
    status = chat.locator(".dfw-status")
    # from the first seconds the header says what the run is doing and for how long
    status.filter(has_text=re.compile(r"^running · .+ · \d+ s")).wait_for(timeout=120_000)
    chat.locator(".dfw-assistant").first.wait_for()
    snap(chat, "chat_streaming_progress.png")
    wait_idle(page)
    expect(chat.locator(".dfw-assistant").last).to_contain_text("per region")

    # the thread list: this user's threads, the open one marked
    chat.locator(".dfw-threads > summary").click()
    rows = chat.locator(".dfw-thread")
    rows.filter(has_text="Earlier analysis").wait_for()
    expect(rows).to_have_count(2)
    expect(chat.locator(".dfw-thread-current")).to_have_count(1)
    # rename the open thread in place
    current = chat.locator(".dfw-thread-current")
    current.locator(".dfw-thread-rename").click()
    box = current.locator(".dfw-rename-input")
    box.fill("Revenue walkthrough")
    box.press("Enter")
    chat.locator(".dfw-thread-current").filter(has_text="Revenue walkthrough").wait_for()
    chat.locator(".dfw-title").filter(has_text="Revenue walkthrough").wait_for()
    # the model picker lists the configured models
    picker = chat.locator("select.dfw-model")
    assert picker.locator("option").all_inner_texts() == ["default model", "Scripted browser-test model",
                                                          "Backup model"]
    snap(chat, "chat_thread_list.png")
    # open the earlier thread, pick the backup model and continue it
    rows.filter(has_text="Earlier analysis").locator(".dfw-thread-open").click()
    chat.locator(".dfw-assistant").filter(has_text="The earlier analysis is done.").wait_for()
    chat.locator(".dfw-title").filter(has_text="Earlier analysis").wait_for()
    picker.select_option("backup")
    chat.locator("textarea").fill("And with the other model?")
    chat.locator(".dfw-send").click()
    chat.locator(".dfw-assistant").filter(has_text="The backup model answers.").wait_for(timeout=60_000)

    # the diff, side by side: a deleted "-- comment" line is a deletion, blank lines keep their height
    diff = page.locator(".dfw-workspace").first
    card = diff.locator(".dfw-change").first
    if card.get_attribute("open") is None:
        card.locator("summary").click()
    left = card.locator(".dfw-split > .dfw-diff").first
    deleted = left.locator(".dfw-del")
    deleted.first.wait_for()
    assert [t.replace("\u00a0", "") for t in deleted.all_inner_texts()][0].endswith("-- totals per region")
    heights = card.locator(".dfw-split .dfw-diff > div:not(.dfw-hunk)").evaluate_all(
        "(rows) => rows.map((r) => r.getBoundingClientRect().height)")
    assert heights and min(heights) > 8  # empty lines are one line high, not collapsed
    assert "82 B → 90 B" in card.locator("summary").inner_text()
    snap(diff, "workspace_diff_split.png")
