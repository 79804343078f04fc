"""The one run path: execute the lead agent graph and stream :class:`StreamEvent`s.

The embedded client, the Jupyter server extension and scheduled work all run
agents through :func:`agent_run` (inside a :class:`~.run_manager.RunManager`),
which wraps :func:`execute_run` with the run journal, workspace change review and
rollback points.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from deerflow_nb.context import PRODUCED_OUTPUTS_KEY, RunContext
from deerflow_nb.errors import AnswerError
from deerflow_nb.persistence.events import JournalEntry, RunEventStore
from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.journal import RunJournal
from deerflow_nb.runtime.progress import MODEL_PROGRESS
from deerflow_nb.runtime.serialize import thread_message_cache
from deerflow_nb.runtime.streaming import StreamConverter
from deerflow_nb.runtime.workspace import delivery_receipt, produced_in, produced_outputs, snapshot, workspace_changes
from deerflow_nb.tools.present_files import presented_paths

__all__ = ["FINAL_STATE_KEY", "INTERRUPTED_FLAG", "STREAM_MODES", "agent_run", "capture_rollback_point",
           "error_payload", "execute_run", "mark_interrupted", "restore_rollback_point"]

logger = logging.getLogger(__name__)
STREAM_MODES = ["values", "messages", "custom"]
#: ``context.extra`` key under which :func:`agent_run` leaves the thread's state after a
#: successful run (the last ``values`` snapshot), so plug-ins need not read it back.
FINAL_STATE_KEY = "deerflow.final_state"
#: ``additional_kwargs`` flag of the assistant message that closes a run cut short.
INTERRUPTED_FLAG = "deerflow_interrupted"
_UNSET: Any = object()
#: After a pass of the graph: ``(events to yield, the next pass's message or None)``.
Continuation = Callable[[StreamConverter], Awaitable[tuple[list[StreamEvent], BaseMessage | None]]]


async def execute_run(
    graph: Any,
    graph_input: Any,
    *,
    context: RunContext,
    config: dict[str, Any],
    durability: str = "async",
    converter: StreamConverter | None = None,
    stream_tokens: bool = True,
    stream_updates: bool = False,
    on_success: Callable[[], Awaitable[Any]] | None = None,
    continuation: Continuation | None = None,
) -> AsyncIterator[StreamEvent]:
    """Run ``graph`` on ``graph_input`` and yield events, ending with ``end``.

    A failed run yields ``error`` (``message``, ``type``, ``stop_reason``, see
    :func:`error_payload`) and then ``end`` with ``status: "error"``; a successful run's
    ``end`` has ``status: "success"``.

    ``on_success()`` is awaited when the graph has finished without error, together with
    the saver's flush (they overlap), before ``end``; its failure, like the flush's, turns
    the run into an ``error``.

    With ``stream_tokens=False`` (a blocking ``chat``), LangGraph's ``messages`` mode is
    skipped: each AI message's text then arrives as one delta when its step completes,
    which saves the per-token callback cost nobody would consume. ``stream_updates=True``
    adds LangGraph's ``updates`` mode (``updates`` events, ``{node: update}`` per step).

    ``continuation(converter)`` (goal mode, :class:`~deerflow_nb.runtime.goal.GoalLoop`) is
    awaited after each pass of the graph: it answers events to yield and the input of another
    pass in the same run (``None``: the run ends). A failing pass fails the run.

    Cancellation (``asyncio.CancelledError``) propagates to the caller after the
    graph stops; the checkpoint keeps what was completed.
    """
    converter = converter or StreamConverter()
    modes = STREAM_MODES if stream_tokens else ["values", "custom"]
    if stream_updates:
        modes = [*modes, "updates"]
    try:
        passes = True
        while passes:
            async for mode, chunk in graph.astream(
                graph_input,
                config=config,
                context=context,
                stream_mode=modes,
                durability=durability,
            ):
                for event in converter.feed(mode, chunk):
                    yield event
            passes = False
            if continuation is not None:
                events, next_message = await continuation(converter)
                for event in events:
                    yield event
                if next_message is not None:
                    graph_input, passes = {"messages": [next_message]}, True
                    # later passes go on from the thread's head (a run from a checkpoint wrote its own)
                    config = {**config, "configurable": {k: v for k, v in config.get("configurable", {}).items()
                                                         if k != "checkpoint_id"}}
        # a saver that writes behind the run (SQLite) commits the last checkpoints now, and
        # reports a failed write as this run's error
        flush = getattr(getattr(graph, "checkpointer", None), "aflush", None)
        finishing = [work() for work in (flush, on_success) if work is not None]
        for outcome in await asyncio.gather(*finishing, return_exceptions=True):
            if isinstance(outcome, BaseException):
                raise outcome
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        error = error_payload(exc, context.run_id)
        context.extra["stop_reason"] = error["stop_reason"]
        logger.warning("run %s failed (%s): %s", context.run_id, error["stop_reason"], error["message"])
        logger.debug("run %s failure", context.run_id, exc_info=exc)
        yield StreamEvent("error", error)
        status = "error"
    else:
        status = "success"
    yield StreamEvent(
        "end",
        {
            "run_id": context.run_id,
            "status": status,
            "usage": converter.usage(),
            "usage_by_model": context.extra.get("token_usage", {}),
            "stop_reason": context.extra.get("stop_reason"),
            "pending_input": converter.pending_input() if status == "success" else None,
        },
    )


def error_payload(exc: BaseException, run_id: str | None) -> dict[str, Any]:
    """The ``error`` event data for a run that raised ``exc``.

    ``stop_reason``: the model failure's (``model_timeout``, ``rate_limited``, ...; see
    :func:`~deerflow_nb.agent.middlewares.model_retry.classify_model_error`),
    ``recursion_limit`` for LangGraph's step budget, else ``run_error``.
    """
    from langgraph.errors import GraphRecursionError

    from deerflow_nb.errors import RunError

    origin = exc.__cause__ if isinstance(exc, RunError) and exc.__cause__ is not None else exc
    if isinstance(exc, RunError) and exc.stop_reason:
        stop_reason, message = exc.stop_reason, exc.cause
    elif isinstance(exc, GraphRecursionError):
        stop_reason, message = "recursion_limit", f"the run used up its step budget (recursion_limit): {exc}"
    else:
        stop_reason, message = "run_error", f"{type(exc).__name__}: {exc}"
    return {"message": message, "type": type(origin).__name__, "stop_reason": stop_reason, "status": "error",
            "run_id": run_id}


async def agent_run(
    graph: Any,
    graph_input: Any,
    *,
    context: RunContext,
    config: dict[str, Any],
    input_message: BaseMessage | None = None,
    events: RunEventStore | None = None,
    user_data: Path | None = None,
    stream_tokens: bool = True,
    stream_updates: bool = False,
    workspace_before: dict[str, Any] | None = _UNSET,
    journal_sink: Callable[[list[JournalEntry]], None] | None = None,
    finish_blocking: Callable[[str], None] | None = None,
    continuation: Continuation | None = None,
) -> AsyncIterator[StreamEvent]:
    """:func:`execute_run` plus the run journal and the ``workspace_changes`` review.

    The workspace is snapshotted (off the loop) before the graph starts and after
    it stops, also when the run fails or is cancelled; changes become a
    ``workspace_changes`` journal entry and a ``custom`` event just before ``end``.
    ``workspace_before`` passes a snapshot taken already (saves a worker-thread hop);
    ``journal_sink`` receives the journal's last batch instead of ``events`` (see
    :class:`RunJournal`). After ``end``, ``context.extra[FINAL_STATE_KEY]`` holds the
    thread's final state. ``finish_blocking(status)`` (``success``, ``error`` or
    ``interrupted``) runs once, off the loop, in the hop that takes the last snapshot.
    ``continuation``: see :func:`execute_run` (one journal and one review for all passes).
    """
    assert context.run_id and context.thread_id
    journal = RunJournal(events, run_id=context.run_id, thread_id=context.thread_id, user_id=context.user_id,
                         sink=journal_sink, trace_id=context.extra.get("trace_id"))
    if input_message is not None:
        journal.record_input(input_message)
    if workspace_before is _UNSET:
        before = await asyncio.to_thread(snapshot, user_data) if user_data is not None else None
    else:
        before = workspace_before if user_data is not None else None
    status = "interrupted"
    converter = StreamConverter(forms=thread_message_cache(context.thread_id))
    finish = _once(finish_blocking) if finish_blocking is not None else None
    succeeded: list[dict[str, Any] | None] = []  # the success path's workspace change, taken early
    if before is not None and user_data is not None:  # the answer check asks what the run produced so far
        start, folder = before, user_data
        context.extra[PRODUCED_OUTPUTS_KEY] = lambda: produced_outputs(start, snapshot(folder, areas=("outputs",)))

    def receipt_of(change: dict[str, Any] | None) -> dict[str, Any]:
        messages = list((converter.final_state or {}).get("messages") or [])
        return {"run_id": context.run_id, "thread_id": context.thread_id,
                **delivery_receipt(produced_in(change), presented_paths(_run_messages(messages, input_message)))}

    async def on_success() -> None:
        # overlaps the checkpoint flush: the snapshot hop and the database hop run side by side
        change = await _workspace_event(before, user_data, context, "success", finish)
        succeeded.append(change)
        receipt = receipt_of(change)
        if not receipt["satisfied"] and not converter.pending_input():
            unshown = ", ".join(receipt["produced_paths"])
            cause = f"the run wrote {unshown} under /mnt/user-data/outputs and presented none of it"
            raise AnswerError(cause, run_id=context.run_id, stop_reason="undelivered_outputs", cause=cause)

    try:
        async for event in execute_run(graph, graph_input, context=context, config=config, converter=converter,
                                       stream_tokens=stream_tokens, stream_updates=stream_updates,
                                       on_success=on_success, continuation=continuation):
            if event.type == "custom" and (event.data or {}).get("type") == MODEL_PROGRESS:
                yield event  # the moment, not the conversation: becomes progress, not journaled
                continue
            if event.namespace is not None:  # a subagent's frame (``stream_subgraphs``): stream only
                yield event
                continue
            if event.type == "error":  # the ``end`` that follows closes the run
                status = "error"
                journal.observe(event)
                yield event
                continue
            if event.type == "end":
                if status != "error":
                    status = "success"
                    context.extra[FINAL_STATE_KEY] = converter.final_state
                if succeeded and status == "success":
                    change = succeeded[0]
                else:
                    change = await _workspace_event(before, user_data, context, status, finish)
                finish = None
                journal.close_messages()
                if user_data is not None and before is not None:
                    journal.add("run.delivery", "delivery", {**receipt_of(change), "status": status})
                if change is not None:
                    journal.add("workspace_changes", "workspace", change)
                    yield StreamEvent("custom", {"type": "workspace_changes", **_summary(change)})
                    before = None  # recorded; the finally below must not record it twice
                journal.observe(event)
                await journal.close()
                yield event
                continue
            journal.observe(event)
            if journal.should_flush:
                await journal.flush()
            yield event
    finally:
        if (before is not None and status == "interrupted") or finish is not None:
            change = await _workspace_event(before if status == "interrupted" else None, user_data, context, status,
                                            finish)
            journal.close_messages()
            if change is not None:
                journal.add("workspace_changes", "workspace", change)
        try:
            await journal.close()
        except Exception as exc:  # the journal must never turn a finished run into a failure
            logger.warning("could not write the journal of run %s: %s", context.run_id, exc)


def _run_messages(messages: list[BaseMessage], input_message: BaseMessage | None) -> list[BaseMessage]:
    """The messages this run added: those after its input message (else after the user's latest message)."""
    if input_message is not None and input_message.id is not None:
        for index, message in enumerate(messages):
            if message.id == input_message.id:
                return messages[index + 1:]
    last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)
                and not m.additional_kwargs.get("deerflow_internal")), default=-1)
    return messages[last + 1:]


def _once(func: Callable[[str], None]) -> Callable[[str], None]:
    """``func``, callable once (later calls do nothing)."""
    called = False

    def call(status: str) -> None:
        nonlocal called
        if not called:
            called = True
            func(status)

    return call


async def _workspace_event(before: dict[str, Any] | None, user_data: Path | None, context: RunContext,
                           status: str, finish: Callable[[str], None] | None = None) -> dict[str, Any] | None:
    """The run's workspace changes (``None``: none); runs ``finish(status)`` in the same hop."""
    if (before is None or user_data is None) and finish is None:
        return None

    def after_run() -> dict[str, Any] | None:
        if finish is not None:
            try:
                finish(status)
            except Exception as exc:  # bookkeeping must not change the run's outcome
                logger.warning("finishing run %s failed: %s", context.run_id, exc)
        return snapshot(user_data) if before is not None and user_data is not None else None

    after = await asyncio.to_thread(after_run)
    if after is None or before is None:
        return None
    assert context.run_id and context.thread_id
    change = workspace_changes(before, after, run_id=context.run_id, thread_id=context.thread_id, status=status)
    return change if change["changes"] else None


def _summary(change: dict[str, Any]) -> dict[str, Any]:
    counts = {"added": 0, "modified": 0, "deleted": 0}
    for item in change["changes"]:
        counts[item["status"]] += 1
    return {"run_id": change["run_id"], "paths": [c["path"] for c in change["changes"]], **counts}


async def capture_rollback_point(checkpointer: Any, thread_id: str) -> dict[str, Any] | None:
    """The config of the thread's newest checkpoint (``None``: the thread has no state yet).

    Raises :class:`~deerflow_nb.errors.CheckpointModeMismatchError` when a ``full``-mode
    process meets a thread written in delta mode.
    """
    from deerflow_nb.agent.checkpoint_mode import ensure_compatible, process_mode

    saved = await checkpointer.aget_tuple({"configurable": {"thread_id": thread_id}})
    ensure_compatible(process_mode(), saved, thread_id)
    return dict(saved.config) if saved is not None else None


async def restore_rollback_point(graph: Any, checkpointer: Any, thread_id: str,
                                 point: dict[str, Any] | None) -> None:
    """Make the state from ``point`` the thread's head again (full-mode fork of that checkpoint)."""
    if point is None:
        await checkpointer.adelete_thread(thread_id)
        return
    await graph.aupdate_state(point, None)


async def mark_interrupted(graph: Any, thread_id: str, run_id: str, *, reason: str,
                           partial_texts: dict[str, str] | None = None, checkpoint_id: str | None = None) -> None:
    """Close a run that was cut short with a marked assistant message in the thread's state.

    The message carries the answer text streamed so far that the state lacks (the
    step being generated when the run stopped), ``additional_kwargs``
    ``{"deerflow_interrupted": True, "run_id", "stop_reason"}``; the next turn then sees
    where the conversation stopped. ``graph`` is any graph compiled with the thread's
    checkpointer and a ``model`` node. ``checkpoint_id``: mark on that checkpoint (a run from a
    checkpoint that wrote none of its own) instead of the thread's newest. Failures are logged, never raised.
    """
    from langchain_core.messages import AIMessage

    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    if checkpoint_id is not None:
        config["configurable"].update(checkpoint_ns="", checkpoint_id=checkpoint_id)
    try:
        snapshot = await graph.aget_state(config)
        messages = list((snapshot.values or {}).get("messages", []))
        known = {m.id for m in messages}
        partial = next((text for mid, text in reversed((partial_texts or {}).items())
                        if mid not in known and text.strip()), "")
        marker = AIMessage(content=partial or "(interrupted before answering)",
                           additional_kwargs={INTERRUPTED_FLAG: True, "run_id": run_id, "stop_reason": reason,
                                              "partial": bool(partial)})
        await graph.aupdate_state(config, {"messages": [marker]}, as_node="model")
        flush = getattr(getattr(graph, "checkpointer", None), "aflush", None)
        if flush is not None:
            await flush()
    except Exception as exc:  # the outcome is already decided; the marker is a courtesy
        logger.warning("could not mark run %s of thread %s as interrupted: %s", run_id, thread_id, exc)


def marker_graph(checkpointer: Any, mode: tuple[str, int] | None = None) -> Any:
    """A minimal graph over the thread state schema for :func:`mark_interrupted` and state edits.

    ``mode`` is ``(checkpoint_channel_mode, snapshot_frequency)``, by default the process's
    frozen one (``full`` before any freeze): the schema and the mode marker then match the
    lead agent's, so its writes and reads agree with the agent's checkpoints.
    """
    from langgraph.graph import END, START, StateGraph

    from deerflow_nb.agent.checkpoint_mode import MODE_MARKER, frozen_checkpoint_mode, register_delta_folds
    from deerflow_nb.agent.state import thread_state_schema

    name, frequency = mode or frozen_checkpoint_mode() or ("full", 1)
    builder = StateGraph(thread_state_schema(name, frequency) if name == "delta" else thread_state_schema())
    builder.add_node("model", lambda state: {})
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    graph = builder.compile(checkpointer=checkpointer)
    if name != "delta":
        return graph
    register_delta_folds(checkpointer)
    return graph.with_config(metadata={MODE_MARKER: "delta"})
