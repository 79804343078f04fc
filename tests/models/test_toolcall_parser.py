"""Tolerant tool-call parsing: whole replies and token streams must agree."""

from __future__ import annotations

import json

import pytest

from deerflow_nb.models.toolcall_parser import ToolCallStreamParser, calls_from_json_text, parse_tool_calls

TOOLS = {"add", "web_search"}


def _stream(text: str, size: int, names: set[str] = TOOLS) -> tuple[list[str], str, list[dict]]:
    parser = ToolCallStreamParser(names)
    pieces = [parser.feed(text[i : i + size]) for i in range(0, len(text), size)]
    pieces.append(parser.finish())
    return pieces, "".join(pieces), parser.tool_calls


def _names_args(calls: list[dict]) -> list[tuple[str, dict]]:
    return [(call["name"], call["args"]) for call in calls]


FENCED = '```json\n{\n  "name": "add",\n  "arguments": {\n    "a": 1234,\n    "b": 4321\n  }\n}\n```'


@pytest.mark.parametrize(
    ("text", "expected_text", "expected_calls"),
    [
        (FENCED, "", [("add", {"a": 1234, "b": 4321})]),
        ('{"name": "add", "arguments": {"a": 1, "b": 2}}', "", [("add", {"a": 1, "b": 2})]),
        ("<tool_call>\n" + '{"name": "add", "arguments": {"a": 1}}' + "\n</tool_call>", "", [("add", {"a": 1})]),
        ('{"name": "add", "parameters": {"a": 3}}', "", [("add", {"a": 3})]),
        ('{"name": "add", "arguments": "{\\"a\\": 5}"}', "", [("add", {"a": 5})]),
        ('{"name": "web_search"}', "", [("web_search", {})]),
        ('{"type": "function", "function": {"name": "add", "arguments": "{}"}}', "", [("add", {})]),
        ('{"tool_calls": [{"name": "add", "arguments": {"a": 1}}]}', "", [("add", {"a": 1})]),
        (
            '[{"name": "add", "arguments": {"a": 1}}, {"name": "web_search", "arguments": {"query": "x"}}]',
            "",
            [("add", {"a": 1}), ("web_search", {"query": "x"})],
        ),
        (
            '```json\n{"name": "add", "arguments": {"a": 1}}\n{"name": "add", "arguments": {"a": 2}}\n```',
            "",
            [("add", {"a": 1}), ("add", {"a": 2})],
        ),
        ("Let me add them.\n" + FENCED + "\nDone.", "Let me add them.\n\nDone.", [("add", {"a": 1234, "b": 4321})]),
        ('I will call <tool_call>{"name": "add", "arguments": {}}</tool_call>', "I will call", [("add", {})]),
        ('<tool_call>\n```json\n{"name": "add", "arguments": {"a": 9}}\n```\n</tool_call>', "", [("add", {"a": 9})]),
        ('  {"name": "add", "arguments": {"a": 1}}\n', "", [("add", {"a": 1})]),
    ],
)
def test_recognised_calls(text: str, expected_text: str, expected_calls: list[tuple[str, dict]]) -> None:
    shown, calls = parse_tool_calls(text, TOOLS)
    assert shown == expected_text
    assert _names_args(calls) == expected_calls
    for call in calls:
        assert call["type"] == "tool_call"
        assert call["id"].startswith("call_")


@pytest.mark.parametrize(
    "text",
    [
        "Plain answer with no JSON at all.",
        '{"name": "delete_everything", "arguments": {}}',  # not a bound tool
        '{"name": "Alice", "age": 3}',  # a JSON answer the user asked for
        '```json\n{"answer": 42}\n```',
        "```python\n" + '{"name": "add", "arguments": {}}' + "\n```\nThat dict is data.",
        "Sets look like {1, 2} and links like [docs](x).",
        "{x} at line start is prose",
        '[{"name": "add"}, {"name": "unknown"}]',  # all-or-nothing: one unknown name keeps it text
        '{"name": "add", "arguments": "not json"}',
        '{"name": "add", "arguments": [1, 2]}',
        '{"name": "add", "arguments": {"a": 1}',  # never closed
        "<b>bold</b> and <tool_ca not a tag",
    ],
)
def test_non_calls_stay_text(text: str) -> None:
    shown, calls = parse_tool_calls(text, TOOLS)
    assert calls == []
    assert shown == text


def test_unclosed_fence_and_tag_are_recovered_at_end() -> None:
    shown, calls = parse_tool_calls('```json\n{"name": "add", "arguments": {"a": 1}}', TOOLS)
    assert (shown, _names_args(calls)) == ("", [("add", {"a": 1})])
    shown, calls = parse_tool_calls('<tool_call>{"name": "add", "arguments": {"a": 2}}', TOOLS)
    assert (shown, _names_args(calls)) == ("", [("add", {"a": 2})])


def test_no_bound_tools_means_no_parsing() -> None:
    text = '{"name": "add", "arguments": {"a": 1}}'
    assert parse_tool_calls(text, set()) == (text, [])
    assert calls_from_json_text(text, set()) is None


def test_call_ids_are_unique() -> None:
    _, calls = parse_tool_calls('[{"name": "add"}, {"name": "add"}]', TOOLS)
    assert len({call["id"] for call in calls}) == 2


def test_braces_inside_strings_do_not_end_the_object() -> None:
    text = '{"name": "web_search", "arguments": {"query": "a } b { c \\" ]"}}'
    shown, calls = parse_tool_calls(text, TOOLS)
    assert shown == ""
    assert calls[0]["args"] == {"query": 'a } b { c " ]'}


SAMPLES = [
    FENCED,
    "Let me add them.\n" + FENCED + "\nThe tool will answer.",
    "Intro line\n" + '{"name": "add", "arguments": {"a": 1}}' + "\nafter",
    'x <tool_call>{"name": "add", "arguments": {"b": 2}}</tool_call> y',
    "```python\nprint({'a': 1})\n```\nDone.",
    "Hello, world!\nSecond line.\n\n",
    '```json\n{"answer": 42}\n```\ntext',
    "a < b and c <tool_x> d",
]


@pytest.mark.parametrize("text", SAMPLES)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_streaming_matches_whole_parse(text: str, size: int) -> None:
    expected_text, expected_calls = parse_tool_calls(text, TOOLS)
    _, shown, calls = _stream(text, size)
    assert shown == expected_text
    assert _names_args(calls) == _names_args(expected_calls)


def test_raw_json_never_reaches_the_stream() -> None:
    text = "Let me add them.\n" + FENCED + "\nThe tool will answer."
    pieces, _, calls = _stream(text, 1)
    assert len(calls) == 1
    for piece in pieces:
        assert "{" not in piece and "```" not in piece and '"name"' not in piece


def test_plain_text_streams_without_waiting_for_the_end() -> None:
    parser = ToolCallStreamParser(TOOLS)
    assert parser.feed("Hello") == "Hello"
    assert parser.feed(" wor") == " wor"
    # Trailing whitespace is held only until the next visible character.
    assert parser.feed("ld ") == "ld"
    assert parser.feed("again") == " again"
    assert parser.finish() == ""


def test_candidates_are_held_until_decided() -> None:
    parser = ToolCallStreamParser(TOOLS)
    assert parser.feed("Sure.\n{") == "Sure."
    assert parser.feed('"name": "add", "arguments": {"a": 1') == ""
    assert parser.feed("}}\nok") == "\n\nok"  # the held newline, then the one after the call
    assert _names_args(parser.tool_calls) == [("add", {"a": 1})]
    # A held candidate that turns out to be prose is released.
    parser = ToolCallStreamParser(TOOLS)
    assert parser.feed("<") == ""
    assert parser.feed("b>") == "<b>"


def test_foreign_fence_contents_stream_line_by_line() -> None:
    parser = ToolCallStreamParser(TOOLS)
    assert parser.feed("```python\n") == "```python"
    assert parser.feed('{"name": "add"}\n') == '\n{"name": "add"}'
    assert parser.feed("```\n") == "\n```"
    assert parser.finish() == "\n"
    assert parser.tool_calls == []


def test_tool_call_chunk_args_are_json() -> None:
    _, calls = parse_tool_calls('{"name": "add", "arguments": {"a": 1}}', TOOLS)
    assert json.loads(json.dumps(calls[0]["args"])) == {"a": 1}
