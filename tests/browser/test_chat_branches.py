"""The chat widget's conversation controls in JupyterLab: regenerate an answer, switch between the
alternatives with the "‹ 2 / 3 ›" switcher, and edit a message (a third alternative).

Screenshots go to ``test-artifacts/browser/``.
"""

from __future__ import annotations

import pytest

from .conftest import snap
from .test_chat_ui import wait_idle
from .test_jupyterlab import expect, open_notebook, run_all

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]


@pytest.mark.parametrize("lab", ["chat_branches"], indirect=True)
def test_regenerate_and_the_branch_switcher(browser_page, lab):
    page = browser_page
    open_notebook(page, lab, "chat_branches.ipynb")
    run_all(page)
    chat = page.locator(".dfw-chat").first
    answer = chat.locator(".dfw-assistant").last
    answer.filter(has_text="The first answer.").wait_for(timeout=120_000)
    wait_idle(page)

    # regenerate: the answer is replaced, the first one is kept as an alternative
    answer.get_by_role("button", name="↻ Regenerate").click()
    chat.locator(".dfw-assistant").filter(has_text="The regenerated answer.").wait_for(timeout=120_000)
    wait_idle(page)
    expect(chat.locator(".dfw-assistant")).to_have_count(1)
    expect(chat.locator(".dfw-user")).to_have_count(1)
    position = chat.locator(".dfw-branch-pos")
    position.filter(has_text="2 / 2").wait_for()
    expect(chat.locator(".dfw-branch-next")).to_be_disabled()
    snap(chat, "chat_branch_switcher.png")

    # ‹ shows the first answer again; › goes back to the regenerated one
    chat.locator(".dfw-branch-prev").click()
    chat.locator(".dfw-assistant").filter(has_text="The first answer.").wait_for()
    position.filter(has_text="1 / 2").wait_for()
    expect(chat.locator(".dfw-branch-prev")).to_be_disabled()
    chat.locator(".dfw-branch-next").click()
    chat.locator(".dfw-assistant").filter(has_text="The regenerated answer.").wait_for()
    position.filter(has_text="2 / 2").wait_for()

    # edit the question: a third alternative, answered from the edited text
    chat.locator(".dfw-user").get_by_role("button", name="✎ Edit").click()
    box = chat.locator(".dfw-edit-input")
    box.fill("Which region sold least?")
    chat.get_by_role("button", name="Save & rerun").click()
    chat.locator(".dfw-assistant").filter(has_text="The answer to the edited question.").wait_for(timeout=120_000)
    wait_idle(page)
    expect(chat.locator(".dfw-user")).to_contain_text("Which region sold least?")
    position.filter(has_text="3 / 3").wait_for()
    snap(chat, "chat_branch_edited.png")
