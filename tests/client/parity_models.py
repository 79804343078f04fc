"""The parity suite's model (``use: tests.client.parity_models:ParityModel``): answers depend on the input only."""

from __future__ import annotations

import re
from typing import Any

from deerflow_nb.testing import ScriptedChatModel
from tests.server.models import FORM


def _decide(messages: list[Any]) -> Any:
    last = messages[-1]
    if getattr(last, "type", "") == "tool":
        forgetful = any("never show it" in str(m.content) for m in messages if getattr(m, "type", "") == "human")
        if last.name in ("bash", "write_file") and not forgetful:  # present what was written, as a run must
            return _present(messages, last.name)
        if forgetful:
            return "Wrote the file."
        if last.name == "present_files":
            return "Copied the files." if any(getattr(m, "name", "") == "bash" for m in messages) else \
                "Wrote the file."
        return "Waiting for your answer."
    if last.additional_kwargs.get("human_input_response"):
        return f"Report built from {last.content.split(': ', 1)[-1]}."
    text = str(last.content)
    if "report" in text.lower():
        return FORM
    if re.search(r"\bwrite \S+\.txt", text):
        name = re.search(r"\bwrite (\S+\.txt)", text).group(1)
        return {"content": "", "tool_calls": [{"name": "write_file", "args": {
            "description": "write", "path": f"/mnt/user-data/outputs/{name}", "content": f"hello {name}\n"}}]}
    if text.endswith("copy all uploads"):
        return {"content": "", "tool_calls": [{"name": "bash", "args": {
            "description": "copy", "command": "cp /mnt/user-data/uploads/* /mnt/user-data/outputs/"}}]}
    if "slow please" in text:
        return "tick " * 400
    return f"Answer to {text.split()[-1]}."


def _present(messages: list[Any], tool: str) -> dict[str, Any]:
    if tool == "write_file":
        calls = [c for m in messages if getattr(m, "type", "") == "ai" for c in m.tool_calls]
        paths = [calls[-1]["args"]["path"]]
    else:  # the copied uploads, named in the attached-data note
        note = next(str(m.content) for m in messages if getattr(m, "type", "") == "human")
        names = dict.fromkeys(re.findall(r"/mnt/user-data/uploads/([\w.\-]+\.\w+)", note))
        paths = [f"/mnt/user-data/outputs/{name}" for name in names]
    return {"content": "", "tool_calls": [{"name": "present_files", "args": {"filepaths": paths}}]}


class ParityModel(ScriptedChatModel):
    """Stateless across graph rebuilds, so both backends see the same answers."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["responses"] = [_decide] * 10000
        super().__init__(**kwargs)
