"""The compaction suite's model: answers name what the model was shown, so compaction's effect is visible."""

from __future__ import annotations

from typing import Any

from deerflow_nb.testing import ScriptedChatModel


def _decide(messages: list[Any]) -> Any:
    last = str(messages[-1].content)
    if "Summarize this conversation so far" in last:
        asked = [line.split(": ", 1)[1] for line in last.splitlines() if line.startswith("Human: ")]
        return "They asked: " + ", ".join(asked) + "."
    if "slow please" in last:
        return "tick " * 400
    summary = next((str(m.content) for m in messages if "<summary>" in str(m.content)), "")
    seen = [str(m.content) for m in messages if m.type == "human" and "<summary>" not in str(m.content)]
    note = summary.split("\n")[2] if summary else "no summary"
    return f"Shown {note} and {len(seen)} questions, the last: {seen[-1] if seen else '-'}."


class CompactionModel(ScriptedChatModel):
    """Stateless across graph rebuilds, so both backends see the same answers."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["responses"] = [_decide] * 10000
        super().__init__(**kwargs)
