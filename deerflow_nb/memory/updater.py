"""Turn a conversation into memory updates with one model call.

The model answers with JSON (a fenced ```json block is tolerated)::

    {"user": {"workContext": {"summary": "...", "shouldUpdate": true}, ...},
     "history": {"recentMonths": {"summary": "...", "shouldUpdate": false}, ...},
     "newFacts": [{"content": "...", "category": "preference", "confidence": 0.9}],
     "factsToRemove": ["fact_..."]}

Facts below ``fact_confidence_threshold`` are dropped and at most ``max_facts`` are kept.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from deerflow_nb.config.schema import MemoryConfig
from deerflow_nb.memory.facts import CATEGORIES, Fact
from deerflow_nb.memory.storage import HISTORY_SECTIONS, USER_SECTIONS, MemoryStorage

__all__ = ["MemoryUpdate", "MemoryUpdateError", "apply_update", "build_update_prompt", "parse_update",
           "run_update"]

logger = logging.getLogger(__name__)
_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_MAX_MESSAGE_CHARS = 4000


class MemoryUpdateError(ValueError):
    """The model's answer is not a usable memory update."""


@dataclass
class MemoryUpdate:
    """A parsed update: summaries to replace, facts to add and fact ids to remove."""

    sections: dict[str, str] = field(default_factory=dict)
    new_facts: list[dict[str, Any]] = field(default_factory=list)
    remove_ids: list[str] = field(default_factory=list)


def build_update_prompt(document: Mapping[str, Any], facts: Sequence[Fact],
                        conversation: Sequence[tuple[str, str]]) -> str:
    """The instruction for the memory model."""
    current = {part: {k: (v or {}).get("summary", "") for k, v in (document.get(part) or {}).items()}
               for part in ("user", "history")}
    known = [{"id": f.id, "content": f.content, "category": f.category} for f in facts]
    talk = "\n".join(f"{role}: {text[:_MAX_MESSAGE_CHARS]}" for role, text in conversation)
    return (
        "You maintain the long-term memory of an assistant for data scientists. Read the conversation and "
        "update the memory. Summaries are 1-3 sentences; only set shouldUpdate when something new was learned. "
        "Facts are atomic, durable statements about the user (preferences, knowledge, goals, corrections), "
        f"with a category from {list(CATEGORIES)} and a confidence between 0 and 1. Do not repeat known facts; "
        "list ids of facts the conversation shows are wrong in factsToRemove.\n\n"
        f"Current summaries:\n{json.dumps(current, ensure_ascii=False)}\n\n"
        f"Known facts:\n{json.dumps(known, ensure_ascii=False)}\n\n"
        f"Conversation:\n{talk}\n\n"
        "Answer with JSON only: {\"user\": {\"workContext\"|\"personalContext\"|\"topOfMind\": "
        "{\"summary\": str, \"shouldUpdate\": bool}}, \"history\": {\"recentMonths\"|\"earlierContext\"|"
        "\"longTermBackground\": {\"summary\": str, \"shouldUpdate\": bool}}, \"newFacts\": [{\"content\": str, "
        "\"category\": str, \"confidence\": float}], \"factsToRemove\": [str]}"
    )


def _json_object(text: str) -> dict[str, Any]:
    fenced = _FENCE_RE.search(text)
    candidate = fenced.group(1) if fenced else text
    start, end = candidate.find("{"), candidate.rfind("}")
    if start < 0 or end <= start:
        raise MemoryUpdateError("the memory model's answer contains no JSON object")
    try:
        data = json.loads(candidate[start:end + 1])
    except json.JSONDecodeError as exc:
        raise MemoryUpdateError(f"the memory model's answer is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise MemoryUpdateError("the memory model's answer must be a JSON object")
    return data


def parse_update(text: str) -> MemoryUpdate:
    """Parse the model's answer; unusable parts are skipped, no JSON at all raises."""
    data = _json_object(text)
    update = MemoryUpdate()
    for part, keys in (("user", USER_SECTIONS), ("history", HISTORY_SECTIONS)):
        block = data.get(part)
        if not isinstance(block, dict):
            continue
        for key in keys:
            entry = block.get(key)
            if isinstance(entry, dict) and entry.get("shouldUpdate") and isinstance(entry.get("summary"), str):
                update.sections[key] = entry["summary"].strip()
    for entry in data.get("newFacts") or []:
        if isinstance(entry, dict) and isinstance(entry.get("content"), str) and entry["content"].strip():
            try:
                confidence = float(entry.get("confidence", 0))
            except (TypeError, ValueError):
                continue
            update.new_facts.append({"content": entry["content"].strip(),
                                     "category": str(entry.get("category") or "context"),
                                     "confidence": min(max(confidence, 0.0), 1.0)})
    update.remove_ids = [str(x) for x in data.get("factsToRemove") or [] if isinstance(x, str)]
    return update


def apply_update(storage: MemoryStorage, update: MemoryUpdate, config: MemoryConfig, *,
                 source: str, expected_revision: int | None) -> dict[str, Any]:
    """Write ``update`` (confident facts only, trimmed to ``max_facts``) as one revision."""
    facts = [{**f, "source": source} for f in update.new_facts if f["confidence"] >= config.fact_confidence_threshold]
    return storage.apply_changes(sections=update.sections, new_facts=facts, remove_ids=update.remove_ids,
                                 max_facts=config.max_facts, expected_revision=expected_revision)


async def run_update(storage: MemoryStorage, model: BaseChatModel, conversation: Sequence[tuple[str, str]],
                     config: MemoryConfig, *, source: str, retries: int = 3) -> dict[str, Any]:
    """Ask ``model`` for an update of ``storage`` from ``conversation`` and apply it.

    The model call runs without any lock; the write is optimistic and, if another
    writer got in first, is re-applied on top of the newer memory (the update is a set
    of point operations, so rebasing it is safe).
    """
    import asyncio

    from deerflow_nb.memory.errors import MemoryConflictError

    document = await asyncio.to_thread(storage.document)
    facts = await asyncio.to_thread(storage.facts)
    reply = await model.ainvoke([HumanMessage(content=build_update_prompt(document, facts, conversation))])
    update = parse_update(reply.text if hasattr(reply, "text") else str(reply.content))
    expected: int | None = document["revision"]
    for attempt in range(retries):
        try:
            return await asyncio.to_thread(apply_update, storage, update, config, source=source,
                                           expected_revision=expected)
        except MemoryConflictError:
            if attempt == retries - 1:
                raise
            logger.info("memory changed while updating; re-applying on the newer revision")
            await asyncio.to_thread(storage.load, force=True)
            expected = await asyncio.to_thread(lambda: storage.revision)
    raise AssertionError("unreachable")
