"""The ``<memory>`` block added to the first human message of a thread.

Token counting is a character estimate (about four ASCII characters per token,
one token per other character, which covers CJK text): nothing is downloaded and
the result is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from deerflow_nb.memory.facts import Fact

__all__ = ["build_injection", "estimate_tokens"]

_LABELS = {
    "workContext": "Work context", "personalContext": "Personal context", "topOfMind": "Top of mind",
    "recentMonths": "Recent months", "earlierContext": "Earlier context", "longTermBackground": "Long-term background",
}
_HEADER = ("What you remember about the user from earlier conversations. Use it when it helps; do not "
           "mention it unless it is relevant.")


def estimate_tokens(text: str) -> int:
    """A network-free token estimate: ceil(ASCII characters / 4) + other characters."""
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


def build_injection(document: Mapping[str, Any], facts: Sequence[Fact], max_tokens: int) -> str | None:
    """Summaries, then ``facts`` in the given order, while they fit in ``max_tokens``.

    Returns ``None`` when there is nothing to remember.
    """
    lines: list[str] = []
    for part in ("user", "history"):
        for key, value in (document.get(part) or {}).items():
            summary = str((value or {}).get("summary", "")).strip() if isinstance(value, Mapping) else ""
            if summary:
                lines.append(f"{_LABELS.get(key, key)}: {summary}")
    fact_lines = [f"- [{f.category}] {f.content}" for f in facts]
    if not lines and not fact_lines:
        return None
    opening, closing = "<memory>", "</memory>"
    budget = max_tokens - estimate_tokens(f"{opening}\n{_HEADER}\nFacts:\n{closing}")
    kept: list[str] = []
    for line in lines:
        cost = estimate_tokens(line) + 1
        if cost <= budget:
            kept.append(line)
            budget -= cost
    kept_facts: list[str] = []
    for line in fact_lines:
        cost = estimate_tokens(line) + 1
        if cost > budget:
            break
        kept_facts.append(line)
        budget -= cost
    if not kept and not kept_facts:
        return None
    body = [_HEADER, *kept]
    if kept_facts:
        body += ["Facts:", *kept_facts]
    return "\n".join([opening, *body, closing])
