import pytest

from deerflow_nb.errors import UsageError
from deerflow_nb.testing import ScriptedChatModel
from deerflow_nb.widgets import HumanInputCard

from .conftest import front_end_send

FORM_REQUEST = {
    "version": 2, "mode": "form", "source": "ask_clarification", "tool_call_id": "call_1",
    "question": "Report settings", "clarification_type": "missing_info",
    "fields": [
        {"name": "dataset", "label": "Dataset", "type": "select", "required": True, "options": ["a.csv", "b.csv"]},
        {"name": "rows", "label": "Rows", "type": "number", "required": False},
        {"name": "start", "label": "Start", "type": "date", "required": False},
        {"name": "agree", "label": "I agree", "type": "checkbox", "required": True, "default": False},
    ],
}


def test_python_validation_names_the_field_and_valid_answers_are_handed_on(comm_log):
    got = []
    card = HumanInputCard(FORM_REQUEST, on_submit=got.append)
    for bad, field in [({"agree": True}, "dataset: is required"),
                       ({"dataset": "a.csv"}, "agree: must be agreed to"),
                       ({"dataset": "z.csv", "agree": True}, "dataset: not an option"),
                       ({"dataset": "a.csv", "agree": True, "rows": "many"}, "rows: not a number"),
                       ({"dataset": "a.csv", "agree": True, "start": "01/02/2024"}, "start: expected a date")]:
        with pytest.raises(UsageError, match=field):
            card.submit(bad)
        assert field in card.error and not card.answered
    # the browser's message goes through the same path (errors stay on the card)
    front_end_send(card, {"kind": "respond", "answer": {"agree": True}})
    assert "dataset: is required" in card.error and got == []
    front_end_send(card, {"kind": "respond", "answer": {"dataset": "b.csv", "agree": True, "rows": 5}})
    assert got == [{"dataset": "b.csv", "agree": True, "rows": 5}]
    assert card.answered and "Dataset: b.csv" in card.answer_text and card.error == ""
    with pytest.raises(UsageError, match="already been answered"):
        card.submit({"dataset": "a.csv", "agree": True})
    # the browser saw the answered state
    assert comm_log.updates(card, "answered")[-1]["answered"] is True


def test_text_fallbacks_and_bad_request(comm_log):
    card = HumanInputCard(FORM_REQUEST)
    assert repr(card) == "<HumanInputCard form open: 'Report settings'>"
    bundle, _ = card._repr_mimebundle_()
    assert "Dataset [select] (required)" in bundle["text/plain"]
    assert "(waiting for an answer)" in bundle["text/markdown"]
    with pytest.raises(UsageError, match="tool_call_id"):
        HumanInputCard({"question": "?"})


def test_choice_answer_is_sent_as_an_option(comm_log):
    request = {"version": 1, "mode": "choice_with_other", "tool_call_id": "c", "question": "Which?",
               "options": ["red", "blue"]}
    card = HumanInputCard(request)
    card.submit("blue")
    assert card.answer_text == "blue"
    with pytest.raises(UsageError, match="empty"):
        HumanInputCard(request).submit("   ")


@pytest.mark.asyncio
async def test_for_thread_submits_through_thread_respond(make_agent, comm_log):
    from .conftest import FORM

    model = ScriptedChatModel(responses=[FORM, "Done with sales.csv."])
    agent = make_agent(model=model)
    thread = await agent.athread()
    with pytest.raises(Exception, match="Human input required"):
        await thread.achat("Build the report")
    card = HumanInputCard.for_thread(thread)
    assert not card.answered and card.request["mode"] == "form"
    task = card.submit({"dataset": "sales.csv", "agree": True})
    await task
    assert card.result == "Done with sales.csv."
    assert await thread.apending_input() is None
    # a card for an answered request shows as answered after a reload
    request = card.request
    again = HumanInputCard.for_thread(thread, request)
    assert again.answered and "Dataset: sales.csv" in again.answer_text
