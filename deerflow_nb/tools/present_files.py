"""``present_files``: show finished files from ``/mnt/user-data/outputs`` to the user."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Annotated

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command
from pydantic import Field

from deerflow_nb.tools.common import Reply, Runtime, error_reply, get_sandbox, make_tool, reply
from deerflow_nb.tools.meta import ToolInputError, normalize_tool_result

__all__ = ["OUTPUTS_DIR", "PRESENTED_KEY", "presented", "presented_paths", "present_files_tool"]

OUTPUTS_DIR = "/mnt/user-data/outputs"
#: ``additional_kwargs`` key of a tool message whose tool put these paths in the run's ``artifacts``.
PRESENTED_KEY = "deerflow_presented"


def presented(message: ToolMessage, paths: list[str]) -> Command:
    """The tool's result: ``message`` (marked with the paths it presents) and the ``artifacts`` update."""
    marked = message.model_copy(update={"additional_kwargs": {**message.additional_kwargs, PRESENTED_KEY: paths}})
    return Command(update={"artifacts": paths, "messages": [marked]})


def presented_paths(messages: Sequence[BaseMessage]) -> list[str]:
    """The paths the tool messages among ``messages`` presented (put in the run's ``artifacts``), in order."""
    paths: list[str] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            paths += [p for p in message.additional_kwargs.get(PRESENTED_KEY) or [] if isinstance(p, str)]
    return list(dict.fromkeys(paths))


def _check_paths(filepaths: list[str]) -> list[str]:
    """Normalised, de-duplicated paths; every one must lie under the outputs folder."""
    if not filepaths:
        raise ToolInputError("filepaths is empty: list the output files to present")
    checked: list[str] = []
    outside: list[str] = []
    for raw in filepaths:
        path = posixpath.normpath(raw.strip()) if isinstance(raw, str) and raw.strip() else ""
        if not path.startswith(OUTPUTS_DIR + "/"):
            outside.append(repr(raw))
        elif path not in checked:
            checked.append(path)
    if outside:
        raise ToolInputError(
            f"only files under {OUTPUTS_DIR}/ can be presented; not allowed: {', '.join(outside)}. "
            f"Copy or save the file to {OUTPUTS_DIR}/ first"
        )
    return checked


def _present_files(
    filepaths: Annotated[
        list[str], Field(description=f"Absolute paths of finished files under {OUTPUTS_DIR}/.")
    ],
    *,
    runtime: Runtime,
) -> Command | ToolMessage | str:
    sandbox = None
    try:
        paths = _check_paths(filepaths)
        sandbox = get_sandbox(runtime)
        missing = [p for p in paths if not sandbox.exists(p)]
        if missing:
            raise FileNotFoundError(f"these files do not exist: {', '.join(missing)}")
    except (OSError, ValueError) as exc:
        return error_reply(runtime, "present_files", exc, sandbox)
    text = "Presented to the user:\n" + "\n".join(paths)
    if not runtime.tool_call_id:  # a direct call has no message to append to
        return reply(runtime, "present_files", Reply(text))
    message = normalize_tool_result(
        ToolMessage(content=text, tool_call_id=runtime.tool_call_id, name="present_files")
    )
    return presented(message, paths)


def present_files_tool() -> BaseTool:
    """The ``present_files`` tool; it updates the ``artifacts`` state key with virtual paths."""
    return make_tool(
        _present_files,
        name="present_files",
        description=(
            f"Show finished files to the user. Only existing files under {OUTPUTS_DIR}/ can be "
            "presented; call this once the files are complete."
        ),
    )
