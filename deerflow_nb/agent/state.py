"""``ThreadState``: LangChain's agent state plus DeerFlow's channels."""

from __future__ import annotations

import functools
import types
from typing import Annotated, Any, NotRequired, Required

from langchain.agents import AgentState
from langchain_core.messages import AnyMessage
from langgraph.channels import DeltaChannel

from deerflow_nb.agent.reducers import (
    merge_artifacts,
    merge_delegations,
    merge_goal,
    merge_message_writes,
    merge_promoted,
    merge_skill_context,
    merge_viewed_images,
)

__all__ = ["DEFAULT_DELTA_SNAPSHOT_FREQUENCY", "STATE_DEFAULTS", "ThreadState", "thread_state_schema",
           "with_state_defaults"]

#: ``checkpoint_delta_snapshot_frequency`` default: every 1000th ``messages`` update stores the whole list.
DEFAULT_DELTA_SNAPSHOT_FREQUENCY = 1000


class ThreadState(AgentState[Any]):
    """State of one conversation thread.

    ``messages`` comes from :class:`AgentState`. The other channels:

    - ``sandbox`` — ``{"sandbox_id": ...}`` of the acquired sandbox;
    - ``thread_data`` — host paths of the thread's user-data folders;
    - ``title`` — generated thread title;
    - ``artifacts`` — presented output files (deduplicated);
    - ``todos`` — plan-mode task list (last value wins);
    - ``uploaded_files`` — uploads the agent has been told about;
    - ``viewed_images`` — images loaded by ``view_image`` for the next model call;
    - ``delegations`` — subagent task ledger (terminal status never downgraded);
    - ``skill_context`` — references of skills in use (never their bodies);
    - ``summary_text`` — summary of compacted history (last value wins).
    - ``goal`` — the active goal of goal mode (see :mod:`deerflow_nb.runtime.goal`; kept across
      ordinary updates, replaced or cleared only by the goal writer).
    - ``promoted`` — deferred MCP tools that ``tool_search`` or routing made callable
      (``{"catalog_hash", "names"}``; see :mod:`deerflow_nb.tools.tool_search`).
    """

    sandbox: NotRequired[dict[str, Any] | None]
    thread_data: NotRequired[dict[str, Any] | None]
    title: NotRequired[str | None]
    artifacts: NotRequired[Annotated[list[str], merge_artifacts]]
    todos: NotRequired[list[dict[str, Any]]]
    uploaded_files: NotRequired[list[dict[str, Any]]]
    viewed_images: NotRequired[Annotated[dict[str, Any], merge_viewed_images]]
    delegations: NotRequired[Annotated[list[dict[str, Any]], merge_delegations]]
    skill_context: NotRequired[Annotated[list[dict[str, Any]], merge_skill_context]]
    summary_text: NotRequired[str | None]
    goal: NotRequired[Annotated[dict[str, Any] | None, merge_goal]]
    promoted: NotRequired[Annotated[dict[str, Any] | None, merge_promoted]]


@functools.cache
def thread_state_schema(mode: str = "full", snapshot_frequency: int = DEFAULT_DELTA_SNAPSHOT_FREQUENCY
                        ) -> type[ThreadState]:
    """The state schema of a lead agent in checkpoint channel ``mode`` (``full`` or ``delta``).

    ``full`` is :class:`ThreadState`: every checkpoint stores the whole ``messages`` list.
    ``delta`` is the same schema with ``messages`` on LangGraph's ``DeltaChannel``
    (reducer :func:`~deerflow_nb.agent.reducers.merge_message_writes`): checkpoints store
    each step's writes and, every ``snapshot_frequency`` updates, the whole list once. Both
    read checkpoints written in full mode.
    """
    if mode == "full":
        return ThreadState
    if mode != "delta":
        raise ValueError(f"checkpoint channel mode must be 'full' or 'delta', got {mode!r}")
    channel: DeltaChannel[list[AnyMessage]] = DeltaChannel(merge_message_writes, snapshot_frequency=snapshot_frequency)
    annotations = {"messages": Required[Annotated[list[AnyMessage], channel]]}
    return types.new_class("DeltaThreadState", (ThreadState,), {},
                           lambda namespace: namespace.update({"__annotations__": annotations,
                                                               "__module__": __name__}))


#: What a client's ``thread.state`` holds for a channel no step has written yet.
STATE_DEFAULTS: dict[str, Any] = {"messages": [], "title": None, "artifacts": [], "todos": [], "uploaded_files": []}


def with_state_defaults(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with the documented channels present (``thread.state["artifacts"]`` is ``[]``, not a KeyError)."""
    return {**{key: (list(v) if isinstance(v, list) else v) for key, v in STATE_DEFAULTS.items()}, **values}
