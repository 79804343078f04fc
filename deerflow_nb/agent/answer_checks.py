"""Checks a final answer must pass before a run may end as ``success``.

A final answer is the assistant's last message of a run: text and no tool calls. These pure
functions say what is wrong with one, in the vocabulary every profile shares (the run's
``stop_reason`` when a repair turn does not fix it):

``empty_answer``
    no text at all.
``raw_tool_call``
    a tool call written as text (``{"name": ..., "arguments": ...}``, ``<tool_call>``).
``instruction_echo``
    the prompt's own instructions repeated back ("To call a tool, reply with only: ...").
``ungrounded_answer``
    placeholders (``<city_name>``, ``[value]``) or numbers that no tool result of the run
    printed and the user did not write.
``unanswered_part``
    a plan in prose ("we can use the table_group tool ...") instead of the work, or a part of
    the question left without an answer.
``undelivered_outputs``
    a file the user asked for was not written.

:func:`check_answer` runs them in that order and returns the first :class:`AnswerProblem`.
Numeric grounding (:func:`ungrounded_numbers`) compares each number of the answer with the
numbers of the sources after rounding, so "3.87" is grounded by a printed ``3.8712`` and "23.4%"
by ``0.234``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from deerflow_nb.errors import ANSWER_STOP_REASONS

__all__ = [
    "ANSWER_STOP_REASONS",
    "AnswerProblem",
    "check_answer",
    "echoed_instructions",
    "find_numbers",
    "is_plan",
    "is_raw_tool_call",
    "placeholders",
    "ungrounded_numbers",
]



@dataclass(frozen=True)
class AnswerProblem:
    """What is wrong with a final answer.

    ``stop_reason``: one of :data:`ANSWER_STOP_REASONS`; ``message``: a short sentence for the
    user (what could not be done); ``repair``: the instruction given to the model for one more try.
    """

    stop_reason: str
    message: str
    repair: str


# -- numbers ---------------------------------------------------------------------------------------

# A number not glued to a letter or underscore (so "C003", "p90", "x2" and "Q1" are names, not
# numbers), with optional thousands separators, decimals, exponent and percent sign.
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-−])?(?P<body>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
    r"(?:[eE](?P<exp>[-+]?\d+))?(?P<pct>\s?%)?(?![\w])"
)


@dataclass(frozen=True)
class Number:
    """A number as written: its value, its decimals (precision) and whether it had a % sign."""

    text: str
    value: float
    decimals: int
    percent: bool


def find_numbers(text: str) -> list[Number]:
    """The numbers written in ``text`` (see the module docstring for what counts as one)."""
    found: list[Number] = []
    for match in _NUMBER.finditer(text):
        body = match.group("body").replace(",", "")
        exp = int(match.group("exp")) if match.group("exp") else 0
        try:
            value = float(body) * (10.0 ** exp)
        except (ValueError, OverflowError):
            continue
        if match.group("sign"):
            value = -value
        decimals = len(body.split(".", 1)[1]) if "." in body else 0
        found.append(Number(match.group(0).strip(), value, max(0, decimals - exp), bool(match.group("pct"))))
    return found


def _rounds_to(source: float, written: Number) -> bool:
    """Whether ``source`` rounded to the written number's precision gives the written number."""
    if not math.isfinite(source):
        return False
    target = abs(written.value)
    value = abs(source)
    tolerance = 0.5 * 10.0 ** (-written.decimals) + 1e-9 * max(1.0, value)
    if abs(value - target) <= tolerance:
        return True
    # scientific notation and very small values: compare relative to the magnitude
    return target != 0 and abs(value - target) <= 5e-3 * target and written.decimals >= 3


def ungrounded_numbers(answer: str, sources: Iterable[str], *, free: float = 10) -> list[str]:
    """Numbers of ``answer`` that none of ``sources`` grounds.

    A written number is grounded when a source number rounds to it (either sign), also as a
    percentage of a fraction (23.4% from 0.234) or the reverse; whole numbers up to ``free`` are
    always allowed (list positions, "the top 3").
    """
    written = find_numbers(answer)
    if not written:
        return []
    pool = [n.value for source in sources for n in find_numbers(source)]
    missing: list[str] = []
    for number in written:
        if number.decimals == 0 and abs(number.value) <= free:
            continue
        candidates = [number]
        if number.percent or number.decimals <= 2:  # 23.4 (%) may be printed as 0.234, and 0.23 as 23.0
            scaled = Number(number.text, number.value / 100, number.decimals + 2, False)
            candidates.append(scaled)
            candidates.append(Number(number.text, number.value * 100, max(0, number.decimals - 2), False))
        if not any(_rounds_to(source, candidate) for source in pool for candidate in candidates):
            missing.append(number.text)
    return list(dict.fromkeys(missing))


# -- non-answers -----------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"<\s*[A-Za-z][\w \-]{0,40}>"           # <city_name>, <value>
    r"|\[\s*(?:insert|your|value|number|name|placeholder)[^\]]{0,40}\]"  # [insert value], [value]
    r"|\{\s*[A-Za-z_][\w.]{0,40}\s*\}"       # {total}, an unformatted f-string field
    r"|\bX{2,}(?:\.X+)?\b|\?\?\?",           # XX.XX, ???
    re.IGNORECASE,
)
_HTML_TAGS = frozenset({"br", "b", "i", "em", "strong", "code", "pre", "p", "sup", "sub", "u", "small"})


def placeholders(text: str) -> list[str]:
    """Template placeholders left in ``text`` (HTML tags such as ``<br>`` are not placeholders)."""
    found = []
    for match in _PLACEHOLDER.finditer(text):
        token = match.group(0)
        inner = token.strip("<>/ ").lower()
        if token.startswith("<") and inner in _HTML_TAGS:
            continue
        found.append(token)
    return found


_TOOL_TAG = re.compile(r"</?(?:tool_call|tools|tool|function_call|toolcall)>", re.IGNORECASE)
_FENCED = re.compile(r"^```[\w-]*\n(?P<body>.*?)\n?```$", re.DOTALL)


def is_raw_tool_call(text: str, tool_names: Iterable[str] = ()) -> bool:
    """Whether ``text`` is (or contains) a tool call written out instead of made."""
    if _TOOL_TAG.search(text):
        return True
    body = text.strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group("body").strip()
    if body.startswith(("{", "[")):
        try:
            value = json.loads(body)
        except ValueError:
            value = None
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                function = item.get("function")
                call: dict = function if isinstance(function, dict) else item
                if isinstance(call.get("name"), str) and any(k in call for k in ("arguments", "parameters", "args")):
                    return True
    names = [re.escape(n) for n in tool_names if n]
    if names and re.fullmatch(rf"\s*(?:{'|'.join(names)})\s*\(.*\)\s*", body, re.DOTALL):
        return True
    return False


#: Phrases of the embedded model's tool instructions that must never reach an answer.
ECHO_MARKERS = ("To call a tool, reply with only", "reply with only:", "Call a tool only when the request",
                "Tools:\n- ")
_WORD = re.compile(r"[a-z0-9_']+")


def echoed_instructions(text: str, instructions: Iterable[str] = (), *, run: int = 8) -> str | None:
    """The instruction text ``text`` repeats (a known marker, or ``run`` consecutive words of one)."""
    for marker in ECHO_MARKERS:
        if marker.lower() in text.lower():
            return marker
    words = _WORD.findall(text.lower())
    if len(words) < run:
        return None
    grams = {tuple(words[i:i + run]) for i in range(len(words) - run + 1)}
    for instruction in instructions:
        source = _WORD.findall(instruction.lower())
        for i in range(len(source) - run + 1):
            if tuple(source[i:i + run]) in grams:
                return " ".join(source[i:i + run])
    return None


_PLAN = re.compile(
    r"\b(?:i will|i'll|we will|we'll|we can|you can|let me|let's|i am going to|i'm going to|we need to|i need to|"
    r"first,? (?:i|we)|to (?:answer|do) this,? (?:i|we))\b",
    re.IGNORECASE,
)


def is_plan(text: str, tool_names: Iterable[str] = ()) -> bool:
    """Whether ``text`` describes work to do (naming a tool or code to run) instead of its result."""
    if not _PLAN.search(text):
        return False
    lowered = text.lower()
    mentions_tool = any(name and name.lower() in lowered for name in tool_names)
    mentions_work = bool(re.search(r"\b(?:the \w+ tool|call(?:ing)? (?:the )?\w+|run(?:ning)? (?:a|the) "
                                   r"(?:command|code|script|program)|use (?:pandas|python|the \w+ function))\b",
                                   lowered))
    return mentions_tool or mentions_work


def check_answer(
    text: str,
    *,
    tool_names: Sequence[str] = (),
    instructions: Sequence[str] = (),
    sources: Sequence[str] | None = None,
    quoted: Sequence[str] = (),
) -> AnswerProblem | None:
    """The first problem of the final answer ``text``, or ``None`` when it may stand.

    ``sources`` (the run's tool results and the user's messages) switches numeric grounding on;
    ``None`` leaves it off. ``instructions`` are the prompt texts an answer must not repeat.
    ``quoted`` are texts the model was shown (the user's messages, tool results): a ``<tag>`` that
    occurs in one of them (pandas' ``<NA>``, a tag the user typed) is quoted, not a placeholder.
    """
    if not text.strip():
        return AnswerProblem("empty_answer", "the model gave no answer",
                             "Your reply was empty. Using the results above, answer the user's question now.")
    if is_raw_tool_call(text, tool_names):
        return AnswerProblem("raw_tool_call", "the model wrote a tool call as its answer instead of making it",
                             "Your reply was a tool call written as text. Either make the call properly, or, if "
                             "the results above answer the question, reply with the answer in plain sentences.")
    echo = echoed_instructions(text, instructions)
    if echo is not None:
        return AnswerProblem("instruction_echo", f"the model repeated its instructions ({echo!r}) instead of "
                             "answering", "Your reply repeated your instructions. Answer the user's question "
                             "itself, using the results above.")
    if is_plan(text, tool_names):
        return AnswerProblem("unanswered_part", "the model described a plan instead of carrying it out",
                             "Your reply describes what to do instead of doing it. Do the work now with your tools, "
                             "then answer with the results.")
    found = [token for token in placeholders(text) if not any(token in shown for shown in quoted)]
    if found:
        shown = ", ".join(dict.fromkeys(found))
        return AnswerProblem("ungrounded_answer", f"the answer contains placeholders ({shown})",
                             f"Your reply contains placeholders ({shown}). Replace each with the real value from "
                             "the results above, or compute it first.")
    if sources is not None:
        missing = ungrounded_numbers(text, sources)
        if missing:
            shown = ", ".join(missing[:5])
            return AnswerProblem("ungrounded_answer", f"the answer states numbers no tool computed ({shown})",
                                 f"Your reply states numbers that no tool result shows ({shown}). Compute every "
                                 "number with a tool, and copy the numbers from the results exactly.")
    return None
