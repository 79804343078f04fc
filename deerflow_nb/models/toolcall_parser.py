"""Tolerant parsing of tool calls that small models write as text.

Qwen2.5-Coder 1.5B usually answers a tool-enabled prompt with the call as JSON in
its text — bare, in a ```json fence, or between ``<tool_call>`` tags — instead of
the server's native tool-call format. This module recovers those calls.

One incremental scanner serves both paths: :class:`ToolCallStreamParser` filters a
token stream (raw tool-call JSON never reaches the streamed text, plain text passes
with minimal delay) and :func:`parse_tool_calls` runs the same scanner over a whole
reply, so streaming and invoking give the same text and the same calls.

A candidate is accepted only when every call in it names a bound tool; anything
else (a JSON answer the user asked for, a code sample) stays text. Candidates are:
``<tool_call>…</tool_call>`` anywhere, a fenced block tagged ``json`` / ``tool_call``
/ nothing, and a JSON object or array that starts a line. Other fenced blocks
(```python …) are passed through without looking inside.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection
from typing import Any

__all__ = ["ToolCallStreamParser", "calls_from_json_text", "parse_tool_calls"]

_OPEN_TAG = "<tool_call>"
_CLOSE_TAG = "</tool_call>"
#: Wrappers small models write instead of <tool_call> (read as if they were <tool_call>).
_STRAY_TAGS = {"<tools>": "</tools>", "<tool>": "</tool>", "<function_call>": "</function_call>",
               "<toolcall>": "</toolcall>"}
_TAGS = ((_OPEN_TAG, _CLOSE_TAG), *_STRAY_TAGS.items())
_FENCE = "```"
_JSON_FENCE_TAGS = frozenset({"", "json", "json5", "jsonc", "tool_call", "tool_code", "tool"})
_ARG_KEYS = ("arguments", "parameters", "args", "input")
_CLOSING_FENCE = re.compile(r"\n[ \t]*```")


def _new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _one_call(obj: Any, names: Collection[str]) -> dict[str, Any] | None:
    """A LangChain tool call from one decoded object, or ``None`` when it is not a bound-tool call."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI shape: {"type": "function", "function": {...}}
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or name not in names:
        return None
    args: Any = {}
    for key in _ARG_KEYS:
        if key in obj:
            args = obj[key]
            break
    if isinstance(args, str):  # OpenAI wire format sends arguments as a JSON string
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    return {"name": name, "args": args, "id": _new_call_id(), "type": "tool_call"}


def _decode_all(text: str) -> list[Any] | None:
    """Decode one or more JSON values separated by whitespace or commas; ``None`` if any is invalid."""
    decoder = json.JSONDecoder(strict=False)  # small models write code with literal newlines in strings
    values: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            return values or None
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return None
        values.append(value)


def calls_from_json_text(text: str, names: Collection[str]) -> list[dict[str, Any]] | None:
    """Tool calls from a JSON snippet; all-or-nothing so a half-valid candidate stays text."""
    if not names:
        return None
    inner = text.strip()
    if inner.startswith(_FENCE):  # a fence nested in <tool_call> tags
        inner = inner[3:].split("\n", 1)[-1] if "\n" in inner else ""
        inner = inner.rstrip().removesuffix(_FENCE)
    values = _decode_all(inner)
    if values is None:
        return None
    flat: list[Any] = []
    for value in values:
        if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
            flat.extend(value["tool_calls"])
        elif isinstance(value, list):
            flat.extend(value)
        else:
            flat.append(value)
    calls = [_one_call(item, names) for item in flat]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _json_end(text: str, start: int) -> int | None:
    """Index just past the bracket-balanced JSON value starting at ``start``; ``None`` if unclosed."""
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


class ToolCallStreamParser:
    """Incremental filter: feed text chunks, get back the text that is safe to show.

    Text that might begin a tool call is held until it is decided; whitespace at
    the end of the buffer is held too, so a reply that is only a tool call streams
    no stray blank lines. After :meth:`finish`, :attr:`tool_calls` holds the calls.
    """

    def __init__(self, tool_names: Collection[str], *, first_only: bool = False) -> None:
        self.tool_names = frozenset(tool_names)
        self.tool_calls: list[dict[str, Any]] = []
        #: keep only the first call; whatever follows it (more calls, an invented answer) is dropped
        self.first_only = first_only
        self._buf = ""
        self._line_start = True
        self._foreign_fence = False  # inside ```python etc.: pass through, do not look inside
        self._held_ws = ""

    def feed(self, text: str) -> str:
        """Add a chunk of model output; return the text that can be shown now."""
        self._buf += text
        return self._emit(self._drain(final=False), final=False)

    def finish(self) -> str:
        """Flush at end of stream; return the remaining text (incomplete candidates become text)."""
        return self._emit(self._drain(final=True), final=True)

    def _emit(self, text: str, *, final: bool) -> str:
        text = self._held_ws + text
        if final:
            self._held_ws = ""
            # A reply that carried calls loses the blank lines around them.
            return text.rstrip() if self.tool_calls else text
        stripped = text.rstrip()
        self._held_ws = text[len(stripped) :]
        return stripped

    def _drain(self, *, final: bool) -> str:
        out: list[str] = []
        while self._buf:
            if self.first_only and self.tool_calls:
                self._buf = ""  # an invented continuation of the first call
                break
            step = self._step(final)
            if step is None:  # undecided: wait for more text
                break
            out.append(step)
        return "".join(out)

    def _take(self, n: int) -> str:
        taken, self._buf = self._buf[:n], self._buf[n:]
        if taken:
            self._line_start = taken.endswith("\n")
        return taken

    def _candidate(self, end: int, body: str) -> str:
        """Consume ``end`` chars; drop them if ``body`` holds bound-tool calls, else return them as text."""
        calls = calls_from_json_text(body, self.tool_names)
        segment = self._take(end)
        if calls is None:
            return segment
        self.tool_calls.extend(calls[:1] if self.first_only else calls)
        return ""

    def _step(self, final: bool) -> str | None:
        """Consume one decided piece of the buffer and return its visible text, or ``None`` to wait."""
        buf = self._buf
        if self._foreign_fence:
            return self._step_foreign_fence(final)
        if self._line_start:
            indent = len(buf) - len(buf.lstrip(" \t"))
            rest = buf[indent:]
            if not rest:
                return self._take(len(buf)) if final else None
            if rest[0] in "{[`":
                return self._step_line_start(indent, final)
        return self._step_plain(final)

    def _step_plain(self, final: bool) -> str | None:
        buf = self._buf
        for open_tag, close_tag in _TAGS:
            if buf.startswith(open_tag):
                close = buf.find(close_tag)
                if close >= 0:
                    return self._candidate(close + len(close_tag), buf[len(open_tag) : close])
                if not final:
                    return None
                return self._candidate(len(buf), buf[len(open_tag) :])  # model forgot the closing tag
        if not final and any(open_tag.startswith(buf) for open_tag, _ in _TAGS):
            return None  # could still become "<tool_call>"
        # Plain text runs to the end of the line or the next "<", whichever comes first.
        stop = len(buf)
        newline = buf.find("\n")
        if newline >= 0:
            stop = newline + 1
        tag = buf.find("<", 1)
        if 0 <= tag < stop:
            stop = tag
        return self._take(stop)

    def _step_line_start(self, indent: int, final: bool) -> str | None:
        buf = self._buf
        rest = buf[indent:]
        if rest[0] == "`":
            if not rest.startswith(_FENCE):
                if _FENCE.startswith(rest) and not final:
                    return None
                return self._step_plain(final)
            newline = rest.find("\n")
            if newline < 0:
                return None if not final else self._take(len(buf))
            tag = rest[3:newline].strip().lower()
            if tag not in _JSON_FENCE_TAGS:
                self._foreign_fence = True
                return self._take(indent + newline + 1)
            match = _CLOSING_FENCE.search(rest, newline)
            if match is None:
                if not final:
                    return None
                return self._candidate(len(buf), rest[newline + 1 :])
            return self._candidate(indent + match.end(), rest[newline + 1 : match.start()])
        # A JSON object or array at the start of a line.
        body = rest[1:].lstrip()
        expected = '"' if rest[0] == "{" else "{"
        if not body:
            return None if not final else self._take(len(buf))
        if body[0] != expected:
            return self._step_plain(final)  # "{x}" or "[link]": prose, not a call
        end = _json_end(rest, 0)
        if end is None:
            return None if not final else self._take(len(buf))
        return self._candidate(indent + end, rest[:end])

    def _step_foreign_fence(self, final: bool) -> str | None:
        buf = self._buf
        if self._line_start:
            stripped = buf.lstrip(" \t")
            if stripped.startswith(_FENCE):
                self._foreign_fence = False
                newline = buf.find("\n")
                if newline < 0 and not final:
                    return None
                return self._take(newline + 1 if newline >= 0 else len(buf))
            if (not stripped or _FENCE.startswith(stripped)) and not final:
                return None
        newline = buf.find("\n")
        return self._take(newline + 1 if newline >= 0 else len(buf))


def parse_tool_calls(
    text: str, tool_names: Collection[str], *, first_only: bool = False
) -> tuple[str, list[dict[str, Any]]]:
    """Split ``text`` into (remaining text, tool calls naming one of ``tool_names``).

    Accepts bare JSON objects or arrays, ```json fenced blocks and ``<tool_call>`` tags;
    each call is ``{"name": ..., "arguments" | "parameters": {...} or a JSON string}``.
    Returned calls are LangChain ``ToolCall`` dicts with fresh ids. ``first_only`` keeps only the
    first call and drops everything after it (an invented continuation).
    """
    if not tool_names:
        return text, []
    parser = ToolCallStreamParser(tool_names, first_only=first_only)
    shown = parser.feed(text) + parser.finish()
    return shown, parser.tool_calls
