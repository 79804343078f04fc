from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deerflow_nb.subagents import EVENT_TYPES
from deerflow_nb.testing import ScriptedChatModel


def task(prompt: str, subagent_type: str = "general-purpose") -> dict:
    return {"name": "task", "args": {"description": prompt[:20], "prompt": prompt, "subagent_type": subagent_type}}


def first_human(messages) -> str:
    return next(m.text for m in messages if isinstance(m, HumanMessage))


def task_results(messages) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage) and m.name == "task"]


def fruit_router(messages):
    """One script for the lead and its subagents, whatever order they call the model in."""
    prompt = first_human(messages)
    if "Count pears" in prompt:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return {"content": "", "tool_calls": [{"name": "bash", "args": {
                "description": "check env", "command": 'echo "token=[$API_TOKEN]"'}}]}
        return "pears: 5"
    if "Count apples" in prompt:
        return "apples: 3"
    return "Summary: " + " | ".join(sorted(m.text for m in task_results(messages)))


def custom_events(events) -> list[dict]:
    return [e.data for e in events if e.type == "custom" and str(e.data.get("type", "")).startswith("task_")]


def test_two_subagents_run_and_a_third_call_is_truncated(make_agent):
    lead = {"content": "", "tool_calls": [task("Count apples"), task("Count pears", "bash"), task("Count plums")]}
    model = ScriptedChatModel(responses=[lead] + [fruit_router] * 10)
    agent = make_agent([], subagents={"max_concurrent_subagents": 2}, model=model)
    thread = agent.thread()
    events = list(thread.stream("Count fruit", secrets={"API_TOKEN": "s3cret"}))
    assert events[-1].type == "end"

    messages = thread.messages
    delegating = next(m for m in messages if isinstance(m, AIMessage) and m.tool_calls)
    assert [c["args"]["prompt"] for c in delegating.tool_calls] == ["Count apples", "Count pears"]
    results = task_results(messages)
    assert sorted(m.text for m in results) == [
        "Task Succeeded. Result: apples: 3", "Task Succeeded. Result: pears: 5"]
    assert messages[-1].text == "Summary: Task Succeeded. Result: apples: 3 | Task Succeeded. Result: pears: 5"
    assert {m.additional_kwargs["subagent_status"] for m in results} == {"completed"}

    # the ledger keeps each subagent's steps for a reopened thread
    ledger = {d["subagent_type"]: d for d in thread.state["delegations"]}
    assert set(ledger) == {"general-purpose", "bash"}
    assert ledger["bash"]["status"] == "completed" and ledger["bash"]["result"] == "pears: 5"
    steps = ledger["bash"]["steps"]
    assert [s["type"] for s in steps] == ["ai", "tool", "ai"]
    assert steps[0]["tool_calls"][0]["name"] == "bash"
    # request secrets never reach a subagent's commands
    assert "token=[]" in steps[1]["text"]
    assert ledger["bash"]["usage"]["output_tokens"] > 0 and ledger["bash"]["model"] == "scripted"

    # subagents see their task, not the lead's conversation
    sub_calls = [c for c in model.calls if "Count pears" in first_human(c)]
    assert sub_calls and all("Count fruit" not in m.text for c in sub_calls for m in c)

    # the run's usage includes the subagents' tokens
    lead_usage = sum(m.usage_metadata["output_tokens"] for m in messages if isinstance(m, AIMessage))
    end = events[-1].data
    assert end["usage_by_model"]["scripted"]["output_tokens"] > lead_usage


def test_event_order_per_task(make_agent):
    lead = {"content": "", "tool_calls": [task("Count apples"), task("Count pears", "bash")]}
    agent = make_agent([lead] + [fruit_router] * 10)
    events = custom_events(list(agent.thread().stream("Count fruit")))
    by_task: dict[str, list[dict]] = {}
    for event in events:
        by_task.setdefault(event["task_id"], []).append(event)
    assert len(by_task) == 2
    for seq in by_task.values():
        kinds = [e["type"] for e in seq]
        assert kinds[0] == "task_started" and seq[0]["model"] == "scripted"
        assert kinds[-1] == "task_completed"
        assert set(kinds[1:-1]) == {"task_running"} and len(kinds) >= 3
        assert sum(k in EVENT_TYPES[2:] for k in kinds) == 1  # exactly one terminal event
        usage = [e["usage"].get("total_tokens", 0) for e in seq[1:-1]]
        assert usage == sorted(usage) and usage[-1] > 0  # cumulative snapshots
        assert seq[-1]["usage"] == seq[-2]["usage"]


def cap_router(messages):
    prompt = first_human(messages)
    if prompt.startswith("job"):
        return f"done {prompt}"
    done = len(task_results(messages))
    if done == 0:
        return {"content": "", "tool_calls": [task("job 1"), task("job 2")]}
    if done == 2:
        return {"content": "", "tool_calls": [task("job 3"), task("job 4")]}
    if done == 3:
        return {"content": "More work:", "tool_calls": [task("job 5")]}
    return "should not get here"


def test_per_run_cap_strips_task_calls_and_stops(make_agent):
    agent = make_agent([cap_router] * 20, subagents={"max_concurrent_subagents": 2, "max_total_per_run": 3})
    thread = agent.thread()
    answer = thread.chat("do all the jobs")
    assert "Subagent delegation limit reached: at most 3 subagent tasks per run" in answer
    assert answer.startswith("More work:")
    assert sorted(m.text for m in task_results(thread.messages)) == [
        f"Task Succeeded. Result: done job {n}" for n in (1, 2, 3)]
    assert len(thread.state["delegations"]) == 3
    last = thread.messages[-1]
    assert isinstance(last, AIMessage) and not last.tool_calls
    assert last.response_metadata["finish_reason"] == "stop"

    # the budget is per run: the next run may delegate again
    agent2_answer = thread.chat("one more")  # cap_router sees 3 earlier results -> job 5 is allowed now
    assert "limit reached" not in agent2_answer
    assert len(thread.state["delegations"]) == 4


def test_timed_out_subagent(make_agent):
    lead = {"content": "", "tool_calls": [task("Slow job")]}
    agent = make_agent([lead, "The job timed out, sorry."], subagents={"timeout_seconds": 0.2})
    agent.subagents.model = ScriptedChatModel(responses=["too late"], latency=30)
    thread = agent.thread()
    events = list(thread.stream("run the slow job"))
    kinds = [e["type"] for e in custom_events(events)]
    assert kinds == ["task_started", "task_timed_out"]
    assert custom_events(events)[-1]["model"] == "scripted"
    result = task_results(thread.messages)[0]
    assert result.status == "error" and result.text.startswith("Task timed out")
    assert result.additional_kwargs["subagent_status"] == "timed_out"
    assert thread.state["delegations"][0]["status"] == "timed_out"
    assert thread.messages[-1].text == "The job timed out, sorry."


def test_turn_cap_is_reported_as_stop_reason(make_agent):
    lead = {"content": "", "tool_calls": [task("Loop forever", "looper")]}
    agent = make_agent([lead, "gave up"], subagents={
        "custom": [{"name": "looper", "description": "keeps listing", "tools": ["ls"], "max_turns": 2}]})
    ls = {"content": "", "tool_calls": [{"name": "ls", "args": {"description": "look",
                                                                "path": "/mnt/user-data/workspace"}}]}
    agent.subagents.model = ScriptedChatModel(responses=[ls] * 10)
    thread = agent.thread()
    assert thread.chat("go") == "gave up"
    entry = thread.state["delegations"][0]
    assert entry["status"] == "failed" and entry["stop_reason"] == "turn_capped"
    result = task_results(thread.messages)[0]
    assert result.text.startswith("Task failed (capped: turn_capped)")
    assert result.additional_kwargs["subagent_stop_reason"] == "turn_capped"


def test_subagents_off_means_no_task_tool(make_agent):
    model = ScriptedChatModel(responses=["plain"])
    agent = make_agent([], model=model)
    thread = agent.thread()
    assert thread.chat("hi", subagent_enabled=False) == "plain"
    assert "<subagents>" not in model.calls[0][0].text
    assert thread.chat("hi again") == "Echo: hi again"
    assert "<subagents>" in model.calls[1][0].text
