from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deerflow_nb.runtime import StreamEvent
from deerflow_nb.widgets._transcript import Transcript

REQUEST = {"version": 1, "mode": "choice_with_other", "source": "ask_clarification", "tool_call_id": "c9",
           "question": "Which file?", "clarification_type": "missing_info", "options": ["a.csv", "b.csv"]}


def test_deltas_tools_and_usage_fold_into_items():
    t = Transcript()
    t.add_user("hi")
    events = [
        StreamEvent("values", {"title": None, "messages": [{"type": "human", "id": "h1", "content": "hi"}]}),
        StreamEvent("messages-tuple", {"type": "ai", "id": "a1", "content": "", "tool_calls": [
            {"id": "c1", "name": "bash", "args": {"command": "ls"}}]}),
        StreamEvent("messages-tuple", {"type": "tool", "id": "t1", "tool_call_id": "c1", "name": "bash",
                                       "content": "data.csv", "status": "success"}),
        StreamEvent("messages-tuple", {"type": "ai", "id": "a2", "content": "Hello "}),
        StreamEvent("messages-tuple", {"type": "ai", "id": "a2", "content": "**world**"}),
        StreamEvent("values", {"title": "Greeting", "todos": [{"content": "x", "status": "pending"}],
                               "artifacts": ["/mnt/user-data/outputs/r.md"]}),
        StreamEvent("end", {"usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}}),
    ]
    for e in events:
        t.apply(e)
    kinds = [(i["kind"], i["id"]) for i in t.items]
    assert kinds == [("user", "h1"), ("tool", "c1"), ("assistant", "a2")]
    assert t.items[0]["pending"] is False  # the optimistic item adopted the real id
    assert t.items[1]["result"] == "data.csv" and t.items[1]["status"] == "success"
    assert t.final_text() == "Hello **world**"
    assert t.title == "Greeting" and t.todos[0]["content"] == "x"
    assert t.artifacts == ["/mnt/user-data/outputs/r.md"]
    assert t.usage["total_tokens"] == 5


def test_clarification_card_and_answer_in_history():
    t = Transcript()
    t.load_state({"messages": [
        HumanMessage(content="report please", id="h1"),
        AIMessage(content="", id="a1", tool_calls=[{"id": "c9", "name": "ask_clarification", "args": {}}]),
        ToolMessage(content="Which file?", tool_call_id="c9", name="ask_clarification", id="t1",
                    artifact={"human_input": REQUEST}),
        HumanMessage(content="b.csv", id="h2", additional_kwargs={
            "hide_from_ui": True, "human_input_response": {"tool_call_id": "c9", "response_kind": "option",
                                                           "option": "b.csv"}}),
        AIMessage(content="Done with b.csv", id="a2", usage_metadata={"input_tokens": 4, "output_tokens": 3,
                                                                       "total_tokens": 7}),
    ], "title": "Report"})
    kinds = [i["kind"] for i in t.items]
    assert kinds == ["user", "input_request", "assistant"]  # no tool card for the clarification, hidden reply
    card = t.items[1]
    assert card["answered"] is True and card["answer_text"] == "b.csv"
    assert t.pending_request() is None
    assert t.usage["total_tokens"] == 7
    md = t.to_markdown()
    assert "### Report" in md and "answered: b.csv" in md and "Done with b.csv" in md


def test_open_request_from_end_event_and_errors():
    t = Transcript()
    t.apply(StreamEvent("messages-tuple", {"type": "ai", "id": "a1", "content": "", "tool_calls": [
        {"id": "c2", "name": "bash", "args": {}}]}))
    t.apply(StreamEvent("end", {"usage": {}, "pending_input": REQUEST}))
    assert t.pending_request()["request"]["question"] == "Which file?"
    t.apply({"type": "error", "data": {"message": "run cancelled", "type": "Cancelled"}})
    assert t.items[0]["status"] == "stopped"  # a tool that never answered was stopped, not failed
    assert t.items[-1] == {"kind": "stopped", "id": "stopped-1", "text": "Stopped: run cancelled"}
    t.apply({"type": "error", "data": {"message": "boom", "type": "RuntimeError"}})
    assert t.items[-1]["kind"] == "error"
    assert "waiting" in t.to_text()


def test_subagent_progress_cards():
    t = Transcript()
    t.apply(StreamEvent("custom", {"type": "task_started", "task_id": "t1", "description": "Research"}))
    t.apply(StreamEvent("custom", {"type": "task_running", "task_id": "t1", "message": "step 2"}))
    assert t.items == [{"kind": "subagent", "id": "t1", "description": "Research", "status": "running",
                        "message": "step 2"}]
    t.apply(StreamEvent("custom", {"type": "task_completed", "task_id": "t1", "result": "found it"}))
    assert t.items[0]["status"] == "completed" and t.items[0]["message"] == "found it"
    t.apply(StreamEvent("custom", {"type": "something_else"}))
    assert len(t.items) == 1
