"""Honest run outcomes: failed model calls, failing commands, cancelled and orphaned runs, headless runs."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest
import yaml
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langchain_core.outputs import ChatGenerationChunk

import deerflow_nb as df
from deerflow_nb.errors import ModelCallError, RunError, RunInterruptedError
from deerflow_nb.testing import ScriptedChatModel


def _agent(tmp_path, responses, *, max_retries=2, **kwargs):
    """A client whose model is a config.yaml entry (so its retry settings apply), with zero waits."""
    config = tmp_path / f"config-{uuid.uuid4().hex[:6]}.yaml"
    config.write_text(yaml.safe_dump({"models": [{
        "name": "flaky", "use": "deerflow_nb.testing:ScriptedChatModel", "responses": responses,
        "max_retries": max_retries, "retry_max_wait": 0}]}))
    return df.DeerFlow(config_path=config, **kwargs)


def run_events(agent, thread_id, run_id):
    return agent.runtime.loop.run(agent.runtime.run_events(thread_id, run_id))


def test_transient_failures_are_retried_then_the_answer_arrives(tmp_path):
    with _agent(tmp_path, [{"error": "rate_limit", "retry_after": 5}, {"error": "timeout"}, "recovered"]) as agent:
        run = agent.thread().start("hi")
        events = list(run.events())
        assert run.wait() == "recovered"
        retries = [e.data for e in events if e.type == "custom" and e.data.get("type") == "model_retry"]
        assert [(r["attempt"], r["stop_reason"]) for r in retries] == [(1, "rate_limited"), (2, "model_timeout")]
        assert all(r["delay"] == 0 for r in retries)  # Retry-After capped by retry_max_wait: 0
        assert events[-1].type == "end" and events[-1].data["status"] == "success"


@pytest.mark.parametrize(("responses", "stop_reason", "calls"), [
    ([{"error": "timeout"}] * 3, "model_timeout", 3),
    ([{"error": "rate_limit", "retry_after": 1}] * 3, "rate_limited", 3),
    ([{"error": "connect"}] * 3, "model_unavailable", 3),
    ([{"error": "auth"}], "model_auth", 1),
    ([{"error": "bad_request"}], "model_error", 1),
    ([{"error": "context_overflow"}], "context_overflow", 1),
])
def test_failed_model_call_ends_the_run_as_an_error(tmp_path, responses, stop_reason, calls):
    with _agent(tmp_path, [*responses, "next turn answer"]) as agent:
        thread = agent.thread()
        run = thread.start("hi")
        retries = [e for e in run.events() if e.type == "custom" and e.data.get("type") == "model_retry"]
        assert len(retries) == calls - 1  # only transient failures are retried
        with pytest.raises(ModelCallError) as caught:
            run.wait()
        error = caught.value
        assert isinstance(error, RunError)
        assert (error.status, error.stop_reason) == ("error", stop_reason)
        assert error.run_id and stop_reason in str(error) and error.cause
        # not written into the conversation as an answer
        assert not [m for m in thread.messages if isinstance(m, AIMessage)]
        # the run record and the journal say so
        info = agent.runtime.loop.run(agent.runtime.runs.get(error.run_id))
        assert (info.status, info.stop_reason) == ("error", stop_reason)
        journal = run_events(agent, thread.id, error.run_id)
        failed = [e["payload"] for e in journal if e["event_type"] == "run_error"]
        assert failed and failed[0]["stop_reason"] == stop_reason
        assert "ai_message" not in [e["event_type"] for e in journal]
        # the next turn works, and the model never saw the failure as an earlier answer
        assert thread.chat("again") == "next turn answer"
        assert [m.content for m in thread.messages if isinstance(m, AIMessage)] == ["next turn answer"]


def test_failed_run_streams_error_then_end(tmp_path):
    with _agent(tmp_path, [{"error": "auth"}]) as agent:
        run = agent.thread().start("hi")
        events = list(run.events())
        assert [e.type for e in events[-2:]] == ["error", "end"]
        assert events[-2].data["stop_reason"] == "model_auth"
        assert events[-2].data["type"] == "AuthenticationError"
        assert events[-1].data["status"] == "error"
        with pytest.raises(ModelCallError):
            run.wait()
        assert run.status == "error"


def test_run_error_renders_as_one_line_in_ipython(tmp_path):
    with _agent(tmp_path, [{"error": "context_overflow"}]) as agent:
        with pytest.raises(ModelCallError) as caught:
            agent.thread().chat("hi")
    lines = caught.value._render_traceback_()
    assert len(lines) == 1 and "context_overflow" in lines[0] and "maximum context length" in lines[0]


def test_achat_raises_too(tmp_path):
    async def main(agent):
        thread = await agent.athread()
        with pytest.raises(ModelCallError):
            await thread.achat("hi")

    with _agent(tmp_path, [{"error": "auth"}]) as agent:
        asyncio.run(main(agent))


def test_respond_raises_when_the_continuation_fails(tmp_path):
    ask = {"content": "", "tool_calls": [{"name": "ask_clarification", "args": {
        "question": "Which file?", "clarification_type": "missing_info"}}]}
    with _agent(tmp_path, [ask, {"error": "auth"}]) as agent:
        thread = agent.thread()
        with pytest.raises(df.HumanInputRequired):
            thread.chat("analyse")
        with pytest.raises(ModelCallError) as caught:
            thread.respond("data.csv")
        assert caught.value.stop_reason == "model_auth"


def test_command_exiting_non_zero_is_an_error_result_and_the_run_goes_on(make_agent):
    agent = make_agent([
        {"content": "", "tool_calls": [{"name": "bash", "args": {"command": "echo oops >&2; exit 3"}}]},
        "The command failed with exit code 3.",
    ])
    thread = agent.thread()
    assert thread.chat("run it") == "The command failed with exit code 3."
    result = next(m for m in thread.messages if isinstance(m, ToolMessage))
    meta = result.additional_kwargs["deerflow_tool_meta"]
    assert result.status == "error" and meta["status"] == "error"
    assert meta["exit_code"] == 3 and meta["error_type"] == "command_failed"
    assert "oops" in result.content and "exit code 3" in result.content


def test_command_exiting_zero_is_a_success_with_its_exit_code(make_agent):
    agent = make_agent([{"content": "", "tool_calls": [{"name": "bash", "args": {"command": "echo fine"}}]}, "ok"])
    thread = agent.thread()
    thread.chat("run it")
    result = next(m for m in thread.messages if isinstance(m, ToolMessage))
    assert result.status == "success" and result.additional_kwargs["deerflow_tool_meta"]["exit_code"] == 0


class _StallingModel(ScriptedChatModel):
    """Streams the first words of its answer, then waits forever (until the run is cancelled)."""

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        for word in ("Partial ", "findings: ", "revenue "):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word, id="stalled-answer"))
        await asyncio.Event().wait()


def test_cancelled_run_keeps_its_partial_answer_marked_interrupted(make_agent):
    agent = make_agent(model=_StallingModel(responses=[]))
    thread = agent.thread()
    run = thread.start("summarise")
    seen = ""
    for event in run.events():
        if event.type == "messages-tuple" and event.data.get("type") == "ai":
            seen += event.data.get("content") or ""
            if seen.endswith("revenue "):
                break
    assert run.cancel() == "cancelled"
    assert run.status == "interrupted"
    with pytest.raises(RunInterruptedError) as caught:
        run.wait()
    assert caught.value.stop_reason == "cancelled"
    last = thread.messages[-1]
    assert isinstance(last, AIMessage) and last.content == "Partial findings: revenue "
    assert last.additional_kwargs["deerflow_interrupted"] is True
    assert last.additional_kwargs["run_id"] == run.run_id


def test_orphaned_run_is_recovered_and_its_thread_marked_interrupted(make_agent, home):
    agent = make_agent(["first answer"])
    thread = agent.thread()
    thread.chat("one")
    store = agent.runtime.loop.run(agent.runtime.store())
    # a run left "running" by a process that no longer exists
    from deerflow_nb.persistence.runs import RunInfo

    orphan = RunInfo(run_id="orphan-run", thread_id=thread.id, user_id="default")
    orphan.owner = f"{os.uname().nodename}:999999"
    agent.runtime.loop.run(store.runs.create(orphan, status="running"))
    agent.close()

    again = make_agent(["after restart"])
    reopened = again.thread(thread.id)
    assert "orphan-run" in again.runtime.recovered_runs
    info = again.runtime.loop.run(again.runtime.runs.get("orphan-run"))
    assert (info.status, info.stop_reason) == ("error", "orphan_recovered")
    last = reopened.messages[-1]
    assert isinstance(last, AIMessage) and last.additional_kwargs.get("deerflow_interrupted") is True
    assert last.additional_kwargs["run_id"] == "orphan-run"
    assert [m.content for m in reopened.messages][:2] == ["one", "first answer"]
    assert reopened.chat("two") == "after restart"


class _ToolRecorder(ScriptedChatModel):
    """Remembers the tool names each call was offered."""

    offered: list = []

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        self.offered.append([t["function"]["name"] for t in kwargs.get("tools", [])])
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


def test_non_interactive_runs_have_no_ask_clarification(make_agent):
    model = _ToolRecorder(responses=["done"], offered=[])
    agent = make_agent(model=model, interactive=False)
    agent.thread().chat("go")
    assert "ask_clarification" not in model.offered[-1] and "bash" in model.offered[-1]
    assert "state the assumptions" in model.calls[0][0].content
    # per run, on an interactive client
    model = _ToolRecorder(responses=["a", "b"], offered=[])
    thread = make_agent(model=model).thread()
    thread.chat("go", non_interactive=True)
    assert "ask_clarification" not in model.offered[-1]
    thread.chat("go again")
    assert "ask_clarification" in model.offered[-1]
    assert "state the assumptions" not in model.calls[-1][0].content


class _InterruptingModel(ScriptedChatModel):
    """Sends the main thread a KeyboardInterrupt (as Ctrl-C would) while the model is busy, then stalls."""

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        import signal
        import threading

        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # a real signal wakes the waiting call
        await asyncio.Event().wait()


def test_keyboard_interrupt_while_waiting_on_chat_cancels_the_run(make_agent):
    agent = make_agent(model=_InterruptingModel(responses=[]))
    thread = agent.thread()
    with pytest.raises(KeyboardInterrupt):
        thread.chat("long job")
    runs = agent.runtime.loop.run(agent.runtime.runs.list_by_thread(thread.id, "default"))
    assert [(r.status, r.stop_reason) for r in runs] == [("interrupted", "cancelled")]
    assert thread.messages[-1].additional_kwargs["deerflow_interrupted"] is True
    # the thread is free again
    assert agent.runtime.runs.active_run(thread.id) is None


def test_an_orphaned_run_keeps_what_it_had_streamed(make_agent):
    from deerflow_nb.persistence.events import JournalEntry
    from deerflow_nb.persistence.runs import RunInfo

    agent = make_agent(["first answer"])
    thread = agent.thread()
    thread.chat("one")
    store = agent.runtime.loop.run(agent.runtime.store())
    orphan = RunInfo(run_id="crashed-run", thread_id=thread.id, user_id="default")
    orphan.owner = f"{os.uname().nodename}:999999"
    agent.runtime.loop.run(store.runs.create(orphan, status="running"))
    # the journal's periodic partial-text entries, as a run streaming a long answer writes them
    entries = [JournalEntry("crashed-run", thread.id, "default", seq, "ai_partial", "message",
                            {"type": "ai", "id": "m-crash", "content": text}, 0.0)
               for seq, text in ((1, "The total"), (2, "The total revenue is 17"))]
    agent.runtime.loop.run(store.events.append(entries))
    agent.close()

    again = make_agent(["after restart"])
    last = again.thread(thread.id).messages[-1]
    assert last.additional_kwargs.get("deerflow_interrupted") is True
    assert last.content == "The total revenue is 17" and last.additional_kwargs["partial"] is True
