"""The feature parity model (``use: tests.client.feature_models:FeatureModel``): answers depend on the input only.

A memory-update prompt gets a JSON update naming the tool the user said they use; anything
else gets ``Noted.``, so both backends learn the same facts.
"""

from __future__ import annotations

import json
import re
from typing import Any

from deerflow_nb.testing import ScriptedChatModel


def _decide(messages: list[Any]) -> Any:
    text = str(messages[-1].content)
    if "Answer with JSON only" in text:
        tool = re.search(r"user: I use (\w+)", text)
        facts = [{"content": f"Uses {tool.group(1)}", "category": "preference", "confidence": 0.9}] if tool else []
        return json.dumps({"user": {"topOfMind": {"summary": "Working with data.", "shouldUpdate": True}},
                           "history": {}, "newFacts": facts, "factsToRemove": []})
    return "Noted."


class FeatureModel(ScriptedChatModel):
    """Stateless across graph rebuilds, so both backends see the same answers."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["responses"] = [_decide] * 10000
        super().__init__(**kwargs)
