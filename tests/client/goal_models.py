"""The goal suite's model (``use: tests.client.goal_models:GoalModel``): agent and evaluator, by input only.

The agent answers a goal continuation ``[Goal continuation k of m]`` with ``Step k.``; a thread
whose first message mentions "stuck" always answers ``Same answer.``; "crash" makes every
continuation fail, "ask later" makes it ask the user (a form),
"slow later" makes it a long answer. The evaluator (its system prompt names it) reads the objective:
``reach step N`` is met once ``Step N.`` is visible, ``ask me`` needs the user, ``broken``
answers no JSON, anything else is never met.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from deerflow_nb.testing import ScriptedChatModel
from tests.server.models import FORM


def _evaluate(messages: list[Any]) -> str:
    prompt = str(messages[-1].content)
    objective = prompt.split("Objective:\n", 1)[1].split("\n\nConversation:", 1)[0]
    transcript = prompt.split("Conversation:\n", 1)[1]
    if "broken" in objective:
        return "I think it is fine."
    if "ask me" in objective:
        return json.dumps({"blocker": "needs_user_input", "reason": "which dataset?", "evidence": "none yet"})
    target = re.search(r"reach step (\d+)", objective)
    if target and f"Step {target.group(1)}." in transcript:
        return "```json\n" + json.dumps({"blocker": "none", "reason": "done", "evidence": transcript[-40:]}) + "\n```"
    return json.dumps({"blocker": "goal_not_met_yet", "reason": "more steps", "evidence": transcript[-40:]})


def _decide(messages: list[Any]) -> Any:
    if isinstance(messages[0], SystemMessage) and "goal evaluator" in str(messages[0].content):
        return _evaluate(messages)
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    first = next((str(m.content) for m in humans if not m.additional_kwargs.get("deerflow_internal")), "")
    last = humans[-1]
    if "stuck" in first:
        return "Same answer."
    continuation = re.match(r"\[Goal continuation (\d+) of \d+\]", str(last.content))
    if continuation:
        if "crash" in first:
            raise RuntimeError("the continuation broke")
        if "ask later" in first:
            return FORM
        if "slow later" in first:
            return "tock " * 400
        return f"Step {continuation.group(1)}."
    if "slow please" in first:
        return "tick " * 400
    return f"Answer to {str(last.content).split()[-1]}"


class GoalModel(ScriptedChatModel):
    """Stateless across graph rebuilds, so both backends see the same answers."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["responses"] = [_decide] * 100000
        super().__init__(**kwargs)
