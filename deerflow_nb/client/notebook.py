"""The agent's work as notebook cells: ``thread.to_notebook()``.

The code the agent ran (files it wrote, ``python - <<EOF`` blocks, shell commands), in order, with
``/mnt/user-data/`` mapped to a local folder, and its explanations as Markdown cells. Cells are plain
nbformat-4 dicts, so nothing beyond the standard library is needed to build or write them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from deerflow_nb.agent.program_questions import ATTACHED_DATA
from deerflow_nb.runtime.serialize import message_text

__all__ = ["NOTEBOOK_ROOT", "build_cells", "notebook_json"]

NOTEBOOK_ROOT = "deerflow_files"
_VIRTUAL = "/mnt/user-data/"
_HEREDOC = re.compile(r"^\s*python3?\s+-\s*<<\s*(['\"]?)(\w+)\1\s*\n(?P<body>.*)\n\2\s*$", re.S)
_SCRIPT_SUFFIXES = (".py", ".sh", ".sql", ".r", ".R")


def _cell(kind: str, source: str) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _tool_cell(name: str, args: dict[str, Any], root: str) -> dict[str, Any] | None:
    def local(path: str) -> str:
        return path.replace(_VIRTUAL, f"{root}/")

    if name == "bash" and isinstance(args.get("command"), str):
        command = local(args["command"])
        if match := _HEREDOC.match(command):
            return _cell("code", match.group("body"))
        if "\n" in command.strip():
            return _cell("code", "%%bash\n" + command.strip())
        return _cell("code", "!" + command.strip())
    if name == "write_file" and isinstance(args.get("path"), str) and isinstance(args.get("content"), str):
        path, content = local(args["path"]), args["content"]
        if path.endswith(_SCRIPT_SUFFIXES):
            content = local(content)
        return _cell("code", f"from pathlib import Path\n\nPath({path!r}).parent.mkdir(parents=True, exist_ok=True)\n"
                             f"Path({path!r}).write_text({content!r})")
    if name == "str_replace" and isinstance(args.get("path"), str):
        path = local(args["path"])
        old, new = str(args.get("old_str", "")), str(args.get("new_str", ""))
        return _cell("code", f"from pathlib import Path\n\n_p = Path({path!r})\n"
                             f"_p.write_text(_p.read_text().replace({old!r}, {new!r}, 1))")
    return None  # reading, listing, presenting and the like change nothing


def build_cells(messages: Sequence[Any], *, run_id: str | None = None, root: str = NOTEBOOK_ROOT,
                thread_id: str | None = None) -> list[dict[str, Any]]:
    """Cells reproducing the thread's runs (or the run ``run_id``) from its messages."""
    failed = {getattr(m, "tool_call_id", None) for m in messages
              if getattr(m, "type", "") == "tool" and getattr(m, "status", "success") == "error"}
    cells = [_cell("markdown", f"# DeerFlow thread {thread_id or ''}".rstrip()
                   + (f", run {run_id}" if run_id else "")
                   + f"\n\nThe agent's work, replayed here: sandbox paths `{_VIRTUAL}...` are `{root}/...`."),
             _cell("code", "import os\n\n" + "".join(
                 f"os.makedirs({f'{root}/{d}'!r}, exist_ok=True)\n" for d in ("uploads", "workspace", "outputs"))
                 .rstrip())]
    current: str | None = None
    for message in messages:
        kind = getattr(message, "type", "")
        extra = getattr(message, "additional_kwargs", None) or {}
        if kind == "human":
            current = extra.get("run_id", current)
            if run_id is not None and current != run_id:
                continue
            text = ATTACHED_DATA.sub("", message_text(message)).strip()
            if text and not extra.get("human_input_response"):
                cells.append(_cell("markdown", "**User:** " + text))
            continue
        if run_id is not None and current != run_id:
            continue
        if kind != "ai":
            continue
        text = message_text(message).strip()
        if text:
            cells.append(_cell("markdown", text))
        for call in getattr(message, "tool_calls", None) or []:
            if call.get("id") in failed:
                continue
            cell = _tool_cell(call.get("name", ""), dict(call.get("args") or {}), root)
            if cell is not None:
                cells.append(cell)
    return cells


def notebook_json(cells: list[dict[str, Any]]) -> str:
    """An nbformat-4 notebook holding ``cells``, for a Python 3 kernel."""
    return json.dumps({
        "cells": cells, "nbformat": 4, "nbformat_minor": 4,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}}}, indent=1, ensure_ascii=False) + "\n"
