r"""Constrained output for small local models: a GBNF grammar over the bound tools, and one-line schemas.

llama.cpp samples only tokens that keep the output inside a grammar. :func:`tool_call_grammar`
builds one that admits exactly two shapes of reply:

- one call of a bound tool, ``<tool_call>\\n{"name": "bash", "arguments": {...}}\\n</tool_call>``,
  with the arguments in the tool's schema (keys in schema order, required keys present, strings
  JSON-escaped, so code with newlines cannot break the JSON) and nothing after it; or
- a plain-text answer, which cannot start like JSON and cannot contain ``<t`` (no invented
  ``<tool_call>`` / ``<tools>`` continuations).

:func:`render_tools` writes the same tools as one line each for the system prompt (about 25
tokens a tool instead of the chat template's full JSON schemas).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["render_tools", "tool_call_grammar"]

_STRING = r'"\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""'
_BASE_RULES = {
    "string": _STRING,
    "integer": r'"-"? ( "0" | [1-9] [0-9]{0,15} )',
    "number": r'"-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?',
    "boolean": r'"true" | "false"',
    "null": r'"null"',
    "value": r"object | array | string | number | boolean | null",
    "object": r'"{" ( string ": " value ( ", " string ": " value )* )? "}"',
    "array": r'"[" ( value ( ", " value )* )? "]"',
}


def _functions(tools: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    """(name, function, parameters) of each OpenAI-format tool that has a name."""
    for tool in tools:
        function = tool.get("function", tool)
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            yield function["name"], function, function.get("parameters") or {}


def _literal(text: str) -> str:
    """A GBNF string literal matching ``text`` exactly."""
    return json.dumps(text, ensure_ascii=False)


class _Builder:
    def __init__(self) -> None:
        self.rules: dict[str, str] = {}
        self.used: set[str] = set()

    def ref(self, name: str) -> str:
        self.used.add(name)
        return name

    def value_rule(self, schema: Mapping[str, Any], name: str) -> str:
        """The rule (name or inline expression) matching a JSON value of ``schema``."""
        if "enum" in schema and all(isinstance(v, str | int | float | bool) for v in schema["enum"]):
            return "( " + " | ".join(_literal(json.dumps(v)) for v in schema["enum"]) + " )"
        if "const" in schema:
            return _literal(json.dumps(schema["const"]))
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [s for s in schema[key] if isinstance(s, Mapping) and s.get("type") != "null"]
                if len(options) == 1:
                    return self.value_rule(options[0], name)
                return self.ref("value")
        kind = schema.get("type")
        if kind in ("string", "integer", "number", "boolean"):
            return self.ref(kind)
        if kind == "array":
            items = schema.get("items")
            item = self.value_rule(items, name + "-item") if isinstance(items, Mapping) else self.ref("value")
            self.rules[name] = f'"[" ( {item} ( ", " {item} )* )? "]"'
            return name
        if kind == "object" and isinstance(schema.get("properties"), Mapping) and schema["properties"]:
            return self.object_rule(schema, name)
        return self.ref("value")

    def object_rule(self, schema: Mapping[str, Any], name: str) -> str:
        """Keys in schema order; required keys always, optional ones may be left out."""
        props = list(schema.get("properties", {}).items())
        required = set(schema.get("required", ()))
        pairs = []
        for key, sub in props:
            value = self.value_rule(sub if isinstance(sub, Mapping) else {}, f"{name}-{_slug(key)}")
            pairs.append((_literal(json.dumps(key) + ": ") + " " + value, key in required))
        # rest_i: what may follow once some key before i was written; start_i: the first key is >= i
        n = len(pairs)
        self.rules[f"{name}-rest{n}"] = '""'
        self.rules[f"{name}-start{n}"] = '""'  # the empty object; unreachable when a key is required
        for i in range(n - 1, -1, -1):
            pair, needed = pairs[i]
            rest = f"{name}-rest{i + 1}"
            self.rules[f"{name}-rest{i}"] = (f'", " {pair} {rest}' if needed else f'( ", " {pair} )? {rest}')
            start = f"{pair} {rest}"
            self.rules[f"{name}-start{i}"] = start if needed else f"{start} | {name}-start{i + 1}"
        self.rules[name] = f'"{{" {name}-start0 "}}"'
        return name


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-").lower() or "x"


def tool_call_grammar(tools: Sequence[Mapping[str, Any]]) -> str:
    """A GBNF grammar: one call of one of ``tools`` (OpenAI format), or a plain-text answer."""
    builder = _Builder()
    calls = []
    for name, _function, params in _functions(tools):
        args = builder.object_rule(params, f"args-{_slug(name)}") if params.get("properties") else '"{}"'
        calls.append(_literal(f'{{"name": {json.dumps(name)}, "arguments": ') + f" {args} " + _literal("}"))
    lines = ["root ::= answer" + (" | call" if calls else "")]
    if calls:
        lines.append('call ::= "<tool_call>\\n" ( ' + " | ".join(calls) + ' ) "\\n</tool_call>"')
    # An answer: not empty, not starting like JSON or a tag, and no "<t" anywhere.
    lines.append(r'answer ::= [^<{\[ \t\n] ( [^<] | "<" [^t] )*')
    for name, body in builder.rules.items():
        lines.append(f"{name} ::= {body}")
    pending = set(builder.used)
    done: set[str] = set()
    while pending:  # base rules and the ones they reference
        rule = pending.pop()
        if rule in done or rule in builder.rules:
            continue
        done.add(rule)
        body = _BASE_RULES[rule]
        lines.append(f"{rule} ::= {body}")
        pending.update(r for r in _BASE_RULES if re.search(rf"\b{r}\b", body) and r != rule)
    return "\n".join(lines) + "\n"


def _param_text(key: str, schema: Mapping[str, Any], required: bool) -> str:
    if "enum" in schema:
        choices = "|".join(str(v) for v in schema["enum"])
        return f"{key}={choices}" if required else f"{key}?={choices}"
    return key if required else f"{key}?"


def render_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    """One line per tool: ``- name(arg, opt?, kind=a|b): first sentence of the description``."""
    lines = []
    for name, function, params in _functions(tools):
        required = set(params.get("required", ()))
        args = ", ".join(_param_text(k, v if isinstance(v, Mapping) else {}, k in required)
                         for k, v in (params.get("properties") or {}).items())
        description = str(function.get("description") or "").strip()
        first = re.split(r"(?<=[.!?])\s", description, maxsplit=1)[0] if description else ""
        lines.append(f"- {name}({args}): {first}".rstrip(": "))
    return "\n".join(lines)
