"""The parity suite's model (``use: tests.client.parity_models:ParityModel``): answers depend on the input only."""

from __future__ import annotations

import re
from typing import Any

from deerflow_nb.testing import ScriptedChatModel
from tests.server.models import FORM


def _decide(messages: list[Any]) -> Any:
    last = messages[-1]
    if getattr(last, "type", "") == "tool":
        if last.name == "bash":
            return "Copied the files."
        return "Wrote the file." if last.name == "write_file" else "Waiting for your answer."
    if last.additional_kwargs.get("human_input_response"):
        return f"Report built from {last.content.split(': ', 1)[-1]}."
    text = str(last.content)
    if "report" in text.lower():
        return FORM
    if re.search(r"\bwrite \S+\.txt", text):
        name = text.split()[-1]
        return {"content": "", "tool_calls": [{"name": "write_file", "args": {
            "description": "write", "path": f"/mnt/user-data/outputs/{name}", "content": f"hello {name}\n"}}]}
    if text.endswith("copy all uploads"):
        return {"content": "", "tool_calls": [{"name": "bash", "args": {
            "description": "copy", "command": "cp /mnt/user-data/uploads/* /mnt/user-data/outputs/"}}]}
    if "slow please" in text:
        return "tick " * 400
    return f"Answer to {text.split()[-1]}."


class ParityModel(ScriptedChatModel):
    """Stateless across graph rebuilds, so both backends see the same answers."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["responses"] = [_decide] * 10000
        super().__init__(**kwargs)
