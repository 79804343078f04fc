"""The chat widget's conversation controls: regenerate, edit, the branch switcher, the goal banner."""

from __future__ import annotations

from deerflow_nb.widgets import ChatWidget
from deerflow_nb.widgets.chat import _goal_banner

from .conftest import front_end_send


def _texts(chat: ChatWidget) -> list[str]:
    return [i["text"] for i in chat.items if i["kind"] in {"user", "assistant"}]


def test_regenerate_edit_and_switch_from_the_browser(make_agent, comm_log):
    agent = make_agent(["First answer.", "Second answer.", "Third answer.", "Edited answer."])
    thread = agent.thread()
    chat = thread.ui("hello")
    assert chat.wait(30) == "First answer."
    (user,) = [i for i in chat.items if i["kind"] == "user"]
    (answer,) = [i for i in chat.items if i["kind"] == "assistant"]
    assert chat.controls == {"editable": [user["id"]], "regenerate": answer["id"], "switchers": {}}
    front_end_send(chat, {"kind": "regenerate"})
    assert chat.wait(30) == "Second answer."
    assert _texts(chat) == ["hello", "Second answer."]  # the old answer is replaced, not appended
    new_user = [i for i in chat.items if i["kind"] == "user"][0]["id"]
    switcher = chat.controls["switchers"][new_user]
    assert switcher["index"] == 2 and switcher["count"] == 2 and switcher["next"] is None
    # the switcher's "‹" shows the first answer again
    front_end_send(chat, {"kind": "checkout", "branch_id": switcher["prev"]})
    assert _texts(chat) == ["hello", "First answer."] and _texts(thread.ui()) == ["hello", "First answer."]
    first_user = [i for i in chat.items if i["kind"] == "user"][0]["id"]
    assert chat.controls["switchers"][first_user]["index"] == 1
    # edit: the message is replaced and the run goes on from there, a third alternative
    front_end_send(chat, {"kind": "edit", "message_id": first_user, "text": "hello again"})
    assert chat.wait(30) == "Third answer."
    assert _texts(chat) == ["hello again", "Third answer."]
    edited = [i for i in chat.items if i["kind"] == "user"][0]["id"]
    assert chat.controls["switchers"][edited]["count"] == 3 and chat.controls["switchers"][edited]["index"] == 3
    assert [b["kind"] for b in thread.branches()] == ["original", "regenerate", "edit"]


def test_goal_banner_follows_the_evaluations(make_agent, comm_log):
    verdict = '{"blocker": "none", "reason": "the plot is there", "evidence": "Here is the plot."}'
    agent = make_agent(["Here is the plot.", verdict])  # the answer, then the evaluator's verdict
    thread = agent.thread()
    thread.set_goal("plot the sales", max_continuations=3)
    chat = thread.ui()
    assert chat.goal["objective"] == "plot the sales" and chat.goal["max_continuations"] == 3
    assert chat.goal["active"] is True and not chat.goal.get("met")
    chat.send("plot the sales")
    assert chat.wait(30) == "Here is the plot."
    assert chat.goal["met"] is True and chat.goal["decision"] == "met" and chat.goal["active"] is False
    assert any(u["goal"].get("met") for u in comm_log.updates(chat, "goal"))  # the browser was told
    assert thread.get_goal() is None  # a met goal is cleared
    step = _goal_banner({"type": "goal_evaluation", "decision": "continue", "blocker": "goal_not_met_yet",
                         "reason": "no plot yet", "continuations": 1, "max_continuations": 3,
                         "objective": "plot the sales"})
    assert step["decision"] == "continue" and step["continuations"] == 1 and not step["met"] and step["active"]


def test_a_failed_edit_shows_the_conversation_it_gave_back(make_agent, comm_log):
    agent = make_agent(["First answer.", {"error": "auth"}])
    chat = agent.thread().ui("hello")
    assert chat.wait(30) == "First answer."
    user = [i for i in chat.items if i["kind"] == "user"][0]["id"]
    chat.edit(user, "hello again")
    chat.wait(30)
    assert chat.status == "error"
    assert _texts(chat) == ["hello", "First answer."]  # the thread's conversation, not the failed attempt
    assert [i["kind"] for i in chat.items][-1] == "error"
    assert chat.controls["editable"] == [user]
