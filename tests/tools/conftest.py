"""Fixtures for invoking tools as the ToolNode would: a tool call with an injected runtime."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.tools import ToolRuntime

from deerflow_nb.config.paths import Paths
from deerflow_nb.context import RunContext
from deerflow_nb.sandbox.local import LocalSandbox, LocalSandboxProvider


@pytest.fixture
def provider(home: Path) -> LocalSandboxProvider:
    return LocalSandboxProvider(paths=Paths(home))


@pytest.fixture
def context(provider: LocalSandboxProvider) -> RunContext:
    return RunContext(thread_id="t1", user_id="alice", sandbox_provider=provider)


@pytest.fixture
def sandbox(provider: LocalSandboxProvider, context: RunContext) -> LocalSandbox:
    return provider.acquire(context.thread_id, user_id=context.user_id)


def make_runtime(context: Any, tool_call_id: str | None = "call-1") -> ToolRuntime:
    return ToolRuntime(
        state={},
        context=context,
        config={},
        stream_writer=lambda _: None,
        tool_call_id=tool_call_id,
        store=None,
    )


@pytest.fixture
def call(context: RunContext) -> Callable[..., Any]:
    """``call(tool, **args)`` invokes ``tool`` with a tool-call dict and the test's context."""

    def _call(tool: Any, **args: Any) -> Any:
        runtime = make_runtime(context)
        return tool.invoke(
            {"type": "tool_call", "id": "call-1", "name": tool.name, "args": {**args, "runtime": runtime}}
        )

    return _call
