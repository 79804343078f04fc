"""A scripted model that writes down the tool names bound to each of its calls.

Usable from ``config.yaml`` (``use: tests.mcp.recording_model:ToolRecordingModel``), so a
test sees what the model received whether it runs in the test process or in a Jupyter
server: one JSON line per call, ``{"tools": [...], "system": "..."}``, appended to ``record_to``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import SystemMessage

from deerflow_nb.testing import ScriptedChatModel

__test__ = False


def _names(tools: Any) -> list[str]:
    out = []
    for tool in tools or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        out.append(str(function["name"] if function else getattr(tool, "name", tool)))
    return out


class ToolRecordingModel(ScriptedChatModel):
    """``ScriptedChatModel`` plus a call log of bound tool names and the system prompt."""

    record_to: str

    def _record(self, messages: list[Any], kwargs: dict[str, Any]) -> None:
        system = next((m.content for m in messages if isinstance(m, SystemMessage)), "")
        with Path(self.record_to).open("a", encoding="utf-8") as log:
            log.write(json.dumps({"tools": _names(kwargs.get("tools")), "system": system}) + "\n")

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self._record(messages, kwargs)
        return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self._record(messages, kwargs)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self._record(messages, kwargs)
        yield from super()._stream(messages, stop, run_manager, **kwargs)

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self._record(messages, kwargs)
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


def read_calls(path: Path) -> list[dict[str, Any]]:
    """The recorded calls, oldest first."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
