"""The tool-call grammar and the one-line tool listing."""

from __future__ import annotations

from typing import Literal

from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from deerflow_nb.models.grammar import render_tools, tool_call_grammar


@tool
def group(path: str, by: str, agg: Literal["sum", "mean"] = "sum", top: int = 0) -> str:
    """Aggregate per group. Second sentence is not listed."""
    return ""


@tool
def present(filepaths: list[str]) -> str:
    """Show files."""
    return ""


def _rules(grammar: str) -> dict[str, str]:
    return dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())


def test_listing_is_one_line_per_tool_with_optional_and_enum_arguments():
    tools = [convert_to_openai_tool(t) for t in (group, present)]
    assert render_tools(tools).splitlines() == [
        "- group(path, by, agg?=sum|mean, top?): Aggregate per group.",
        "- present(filepaths): Show files.",
    ]


def test_grammar_admits_one_call_of_a_bound_tool_or_an_answer():
    rules = _rules(tool_call_grammar([convert_to_openai_tool(t) for t in (group, present)]))
    assert rules["root"] == "answer | call"
    assert rules["call"].startswith('"<tool_call>\\n" ( ') and rules["call"].endswith(' ) "\\n</tool_call>"')
    assert '\\"name\\": \\"group\\"' in rules["call"] and '\\"name\\": \\"present\\"' in rules["call"]
    # required keys come in schema order and cannot be skipped; optional ones can
    assert rules["args-group-start0"] == '"\\"path\\": " string args-group-rest1'
    assert rules["args-group-rest1"] == '", " "\\"by\\": " string args-group-rest2'
    assert rules["args-group-rest2"].startswith('( ", " "\\"agg\\": " ( "\\"sum\\"" | "\\"mean\\"" ) )?')
    assert rules["args-present-filepaths"] == '"[" ( string ( ", " string )* )? "]"'
    # strings are JSON strings: no raw control characters (a literal newline cannot break the call)
    assert "\\x00-\\x1F" in rules["string"]
    # an answer cannot start like JSON or a tag, and cannot contain "<t" (no invented <tool_call>)
    assert rules["answer"] == '[^<{\\[ \\t\\n] ( [^<] | "<" [^t] )*'
    assert "integer" in rules


def test_no_tools_means_answers_only():
    rules = _rules(tool_call_grammar([]))
    assert rules["root"] == "answer" and "call" not in rules
