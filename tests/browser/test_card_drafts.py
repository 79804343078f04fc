"""A human-input card keeps what the user entered when it is redrawn (headless Chromium, no JupyterLab).

A card is rebuilt whenever something it shows changes: the run's status, ``busy``, the kernel going quiet
and coming back. Before, each rebuild emptied the form the user was filling in. These tests load the
widgets' real ES modules into a blank page with a small stand-in for the anywidget model.
"""

from __future__ import annotations

import json

import pytest

from deerflow_nb.widgets.chat import ChatWidget
from deerflow_nb.widgets.human_input import HumanInputCard

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

# the anywidget model's surface the views use: get, on/off, send (ping is answered with a pong)
FAKE_MODEL = """
window.makeModel = (state) => {
  const handlers = {};
  const fire = (event, ...args) => (handlers[event] || []).slice().forEach((f) => f(...args));
  const model = {
    state, sent: [],
    get: (key) => model.state[key],
    set: (key, value) => { model.state[key] = value; fire(`change:${key}`); },
    on: (event, f) => { (handlers[event] = handlers[event] || []).push(f); },
    off: (event, f) => { handlers[event] = (handlers[event] || []).filter((g) => g !== f); },
    send: (msg) => {
      model.sent.push(msg);
      if (msg.kind === "ping") setTimeout(() => fire("msg:custom", { kind: "pong" }), 0);
    },
  };
  return model;
};
"""

FORM = {"mode": "form", "question": "How should I prepare the sales summary?", "fields": [
    {"name": "region", "type": "select", "label": "Region", "options": ["North", "South"], "required": True},
    {"name": "notes", "type": "textarea", "label": "Notes"},
    {"name": "rows", "type": "number", "label": "Rows", "default": 5},
    {"name": "confirm", "type": "checkbox", "label": "I agree", "required": True},
]}


def _esm(widget: type) -> str:
    esm = widget._esm if isinstance(widget._esm, str) else str(widget._esm)
    return esm.replace("export default { render };", "window.dfWidget = { render };")


def mount(page, widget: type, state: dict) -> None:
    page.set_content("<!doctype html><html><body><div id='el'></div></body></html>")
    page.add_script_tag(content=FAKE_MODEL)
    page.add_script_tag(content=_esm(widget), type="module")
    page.wait_for_function("() => window.dfWidget !== undefined")
    page.evaluate(f"""() => {{
        window.model = makeModel({json.dumps(state)});
        window.dfWidget.render({{ model: window.model, el: document.getElementById('el') }});
    }}""")
    page.wait_for_function("() => window.model.sent.some((m) => m.kind === 'ping')")


def fill_form(card) -> None:
    card.locator("select[name='region']").select_option("South")
    card.locator("textarea[name='notes']").fill("Round to two decimals.")
    card.locator("input[name='rows']").fill("12")
    card.locator("input[name='confirm']").check()


def assert_filled(card) -> None:
    assert card.locator("select[name='region']").input_value() == "South"
    assert card.locator("textarea[name='notes']").input_value() == "Round to two decimals."
    assert card.locator("input[name='rows']").input_value() == "12"
    assert card.locator("input[name='confirm']").is_checked()


def sent(page) -> list:
    return page.evaluate("() => window.model.sent.filter((m) => m.kind !== 'ping')")


def test_standalone_card_keeps_the_form_across_redraws_and_submits_it(browser_page):
    page = browser_page
    mount(page, HumanInputCard, {"request": FORM, "answered": False, "answer_text": "", "error": "",
                                   "busy": False, "closed": ""})
    card = page.locator(".dfw-request")
    # submitting empty marks the required fields; the marks survive a redraw too
    card.get_by_role("button", name="Submit").click()
    assert card.locator(".dfw-field-invalid").count() == 2
    fill_form(card)
    old = card.element_handle()
    page.evaluate("() => { window.model.set('busy', true); window.model.set('busy', false); }")
    assert not old.evaluate("n => n.isConnected")  # really redrawn: a new card replaced the old one
    assert_filled(card)
    assert card.locator(".dfw-field-invalid").count() == 0
    card.get_by_role("button", name="Submit").click()
    assert sent(page) == [{"kind": "respond", "answer": {
        "region": "South", "notes": "Round to two decimals.", "rows": 12, "confirm": True}}]


def test_a_new_question_starts_with_an_empty_form(browser_page):
    page = browser_page
    mount(page, HumanInputCard, {"request": FORM, "answered": False, "answer_text": "", "error": "",
                                   "busy": False, "closed": ""})
    card = page.locator(".dfw-request")
    fill_form(card)
    other = {**FORM, "question": "And the next report?"}
    page.evaluate(f"() => window.model.set('request', {json.dumps(other)})")
    card.filter(has_text="And the next report?").wait_for()
    assert card.locator("select[name='region']").input_value() == ""
    assert card.locator("input[name='rows']").input_value() == "5"  # the field's default again
    assert not card.locator("input[name='confirm']").is_checked()


def test_free_text_and_choice_survive_a_redraw(browser_page):
    page = browser_page
    request = {"mode": "choice_with_other", "question": "Which chart?", "options": ["bar", "line"]}
    mount(page, HumanInputCard, {"request": request, "answered": False, "answer_text": "", "error": "",
                                   "busy": False, "closed": ""})
    card = page.locator(".dfw-request")
    card.get_by_role("button", name="line").click()
    page.evaluate("() => { window.model.set('busy', true); window.model.set('busy', false); }")
    assert card.locator(".dfw-choice.dfw-chosen").inner_text() == "line"
    card.locator("textarea.dfw-free").fill("a scatter plot")
    page.evaluate("() => { window.model.set('busy', true); window.model.set('busy', false); }")
    assert card.locator("textarea.dfw-free").input_value() == "a scatter plot"
    assert card.locator(".dfw-choice.dfw-chosen").count() == 0  # typing replaced the choice
    card.get_by_role("button", name="Submit").click()
    assert sent(page) == [{"kind": "respond", "answer": "a scatter plot"}]


def test_chat_card_keeps_the_form_while_the_run_status_changes(browser_page):
    page = browser_page
    items = [{"kind": "user", "id": "u1", "text": "Summarise the sales", "pending": False},
             {"kind": "input_request", "id": "call-1", "request": FORM, "answered": False, "answer_text": "",
              "error": ""}]
    mount(page, ChatWidget, {"items": items, "status": "waiting", "thread_id": "t-1", "files": [], "todos": [],
                             "controls": {}, "threads": [], "browser": False})
    card = page.locator(".dfw-chat .dfw-request")
    fill_form(card)
    page.evaluate("() => window.model.set('status', 'running')")
    assert card.get_by_role("button", name="Submit").is_disabled()  # redrawn, disabled while running
    assert_filled(card)
    page.evaluate("() => window.model.set('status', 'waiting')")
    assert_filled(card)
    card.get_by_role("button", name="Submit").click()
    assert sent(page) == [{"kind": "respond", "tool_call_id": "call-1", "answer": {
        "region": "South", "notes": "Round to two decimals.", "rows": 12, "confirm": True}}]
