"""Human-input requests (``ask_clarification``) and answers.

Request payloads are versioned: v1 ``free_text`` / ``choice_with_other`` and v2
``form`` (from ``fields``). Form validation is atomic: any structurally broken
entry degrades the *whole* form to v1, so a card can never look complete while a
field is missing. Benign problems degrade locally (unknown types and option-less
selects become ``text``). Answers always use the v1 response protocol
(``response_kind`` ``text`` or ``option``); a form answer is a readable summary.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from deerflow_nb.errors import UsageError

if TYPE_CHECKING:
    from langchain_core.messages import HumanMessage

__all__ = [
    "FIELD_TYPES",
    "MAX_FIELDS",
    "MAX_FORM_SERIALIZED_BYTES",
    "MAX_HEADLESS_ROUNDS",
    "MAX_OPTIONS",
    "MAX_TEXT",
    "Responses",
    "build_human_input_request",
    "build_response_message",
    "clean_options",
    "format_request_text",
    "headless_answer",
    "normalize_fields",
    "summarize_form_answer",
    "validate_form_answer",
]

FIELD_TYPES = frozenset({"text", "textarea", "number", "select", "multi_select", "checkbox", "date"})
MAX_FIELDS = 16
MAX_OPTIONS = 24
MAX_TEXT = 200
MAX_FORM_SERIALIZED_BYTES = 16 * 1024
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# Names that collide with members of JavaScript's Object.prototype break form state in the browser.
_JS_RESERVED = frozenset(
    {
        "__proto__", "constructor", "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable",
        "toLocaleString", "toString", "valueOf", "__defineGetter__", "__defineSetter__",
        "__lookupGetter__", "__lookupSetter__",
    }
)


class _Broken(Exception):
    """A structural problem: the whole form degrades to v1."""


def clean_options(options: Any) -> list[str]:
    """Trim option labels, drop blanks and non-strings, de-duplicate keeping order."""
    if not isinstance(options, list):
        return []
    out: list[str] = []
    for option in options:
        if isinstance(option, (int, float)) and not isinstance(option, bool):
            option = str(option)
        if not isinstance(option, str):
            continue
        label = option.strip()
        if label and label not in out:
            out.append(label)
    return out


def _text(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Broken(f"{field} must be a string")
    if len(value) > MAX_TEXT:
        raise _Broken(f"{field} exceeds {MAX_TEXT} characters")
    return value


def _normalize_field(raw: Any, seen: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _Broken("a field is not an object")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name) or name in _JS_RESERVED:
        raise _Broken(f"bad field name {name!r}")
    if name in seen:
        raise _Broken(f"duplicate field name {name!r}")
    seen.add(name)
    kind = raw.get("type", "text")
    try:
        known = kind in FIELD_TYPES
    except TypeError:  # unhashable JSON such as [] or {}
        known = False
    kind = kind if known else "text"
    field: dict[str, Any] = {
        "name": name,
        "label": _text(raw.get("label"), f"{name}.label") or name,
        "type": kind,
        "required": bool(raw.get("required", False)),
    }
    for key in ("placeholder", "description"):
        value = _text(raw.get(key), f"{name}.{key}")
        if value:
            field[key] = value
    if kind in ("select", "multi_select"):
        if isinstance(raw.get("options"), list) and len(raw["options"]) > MAX_OPTIONS * 4:
            raise _Broken(f"{name}.options is far too long")
        options = clean_options(raw.get("options"))
        if len(options) > MAX_OPTIONS:
            raise _Broken(f"{name} has more than {MAX_OPTIONS} options")
        for option in options:
            _text(option, f"{name}.options")
        if options:
            field["options"] = options
        else:
            field["type"] = kind = "text"
    default = raw.get("default")
    if kind == "checkbox":
        field["default"] = default is True or (isinstance(default, str) and default.lower() in {"yes", "true"})
    elif kind == "multi_select":
        values = clean_options(default if isinstance(default, list) else [default] if default else [])
        field["default"] = [v for v in values if v in field.get("options", [])]
    elif kind == "number" and isinstance(default, (int, float)) and not isinstance(default, bool):
        field["default"] = default
    elif default is not None and not isinstance(default, (dict, list)):
        text = _text(str(default), f"{name}.default")
        if kind == "select" and text not in field.get("options", []):
            text = None
        if text:
            field["default"] = text
    return field


def normalize_fields(fields: Any) -> list[dict[str, Any]] | None:
    """Validate and normalize v2 form fields; ``None`` means "degrade to v1"."""
    if not isinstance(fields, list) or not fields:
        return None
    if len(fields) > MAX_FIELDS:
        return None
    seen: set[str] = set()
    try:
        normalized = [_normalize_field(raw, seen) for raw in fields]
    except _Broken:
        return None
    if len(json.dumps(normalized, ensure_ascii=False).encode("utf-8")) > MAX_FORM_SERIALIZED_BYTES:
        return None
    return normalized


def build_human_input_request(args: Mapping[str, Any], tool_call_id: str) -> dict[str, Any]:
    """Turn ``ask_clarification`` arguments into the ``human_input`` payload."""
    question = str(args.get("question") or "").strip() or "Could you clarify?"
    base: dict[str, Any] = {
        "source": "ask_clarification",
        "tool_call_id": tool_call_id,
        "question": question,
        "clarification_type": str(args.get("clarification_type") or "missing_info"),
    }
    if args.get("context"):
        base["context"] = str(args["context"])
    fields = normalize_fields(args.get("fields"))
    if fields is not None:
        return {"version": 2, "mode": "form", **base, "fields": fields}
    options = clean_options(args.get("options"))
    if options:
        return {"version": 1, "mode": "choice_with_other", **base, "options": options}
    return {"version": 1, "mode": "free_text", **base}


def format_request_text(request: Mapping[str, Any]) -> str:
    """Readable fallback text for frontends that do not render cards."""
    lines = []
    if request.get("context"):
        lines.append(str(request["context"]))
    lines.append(str(request.get("question", "")))
    for i, option in enumerate(request.get("options", []), 1):
        lines.append(f"  {i}. {option}")
    for field in request.get("fields", []):
        mark = " (required)" if field.get("required") else ""
        extra = f" — options: {', '.join(field['options'])}" if field.get("options") else ""
        lines.append(f"  - {field['label']} [{field['type']}]{mark}{extra}")
    return "\n".join(line for line in lines if line)


def validate_form_answer(fields: list[dict[str, Any]], values: Mapping[str, Any]) -> dict[str, Any]:
    """Check a form answer against its fields; return cleaned values or raise ``ValueError`` naming a field."""
    cleaned: dict[str, Any] = {}
    unknown = set(values) - {f["name"] for f in fields}
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(sorted(unknown))}")
    for field in fields:
        name, kind = field["name"], field["type"]
        value = values.get(name, field.get("default"))
        if kind == "checkbox":
            value = bool(value)
            if field.get("required") and not value:
                raise ValueError(f"{name}: must be agreed to")
        elif kind == "number":
            if value in (None, ""):
                value = None
            else:
                try:
                    value = float(value) if not isinstance(value, (int, float)) else value
                except (TypeError, ValueError):
                    raise ValueError(f"{name}: not a number: {value!r}") from None
        elif kind == "multi_select":
            value = list(value or []) if not isinstance(value, str) else [value]
            bad = [v for v in value if v not in field.get("options", [])]
            if bad:
                raise ValueError(f"{name}: not an option: {bad[0]!r}")
        elif kind == "select":
            if value not in (None, "") and value not in field.get("options", []):
                raise ValueError(f"{name}: not an option: {value!r}")
        elif kind == "date":
            if value not in (None, "") and not re.match(r"^\d{4}-\d{2}-\d{2}$", str(value)):
                raise ValueError(f"{name}: expected a date as YYYY-MM-DD, got {value!r}")
        elif value is not None:
            value = str(value)
        if field.get("required") and kind != "checkbox" and value in (None, "", []):
            raise ValueError(f"{name}: is required")
        cleaned[name] = value
    return cleaned


def summarize_form_answer(fields: list[dict[str, Any]], values: Mapping[str, Any]) -> str:
    """The readable text summary a form card submits (``response_kind: text``)."""
    lines = []
    for field in fields:
        value = values.get(field["name"])
        if field["type"] == "checkbox":
            shown = "yes" if value else "no"
        elif isinstance(value, list):
            shown = ", ".join(str(v) for v in value) or "(none)"
        elif value in (None, ""):
            shown = "(empty)"
        else:
            shown = str(value)
        lines.append(f"{field['label']}: {shown}")
    return "\n".join(lines)


# -- answers ----------------------------------------------------------------------------
#: Headless answers: a fixed answer, a mapping, or a callable ``request -> answer``.
Responses = str | Mapping[str, Any] | Callable[[dict[str, Any]], Any]
#: How many human-input rounds ``chat(responses=...)`` answers before giving up.
MAX_HEADLESS_ROUNDS = 10


def build_response_message(request: Mapping[str, Any], answer: Any) -> HumanMessage:
    """The hidden human message answering ``request`` (v1 response protocol).

    A form answer (a mapping of field values) is validated and sent as a readable
    text summary; a choice that matches an option is sent as ``option``.
    Raises :class:`~deerflow_nb.errors.UsageError` naming the problem for an invalid answer.
    """
    from langchain_core.messages import HumanMessage

    if answer is None or (isinstance(answer, str) and not answer.strip()):
        raise UsageError("the answer must not be empty")
    response: dict[str, Any] = {"source": "ask_clarification", "tool_call_id": request.get("tool_call_id")}
    if request.get("mode") == "form":
        if not isinstance(answer, Mapping):
            raise UsageError("this request is a form: answer with a dict of field values, "
                             f"fields: {[f['name'] for f in request.get('fields', [])]}")
        try:
            values = validate_form_answer(request["fields"], answer)
        except ValueError as exc:
            raise UsageError(f"invalid form answer: {exc}") from None
        text = summarize_form_answer(request["fields"], values)
        response.update(response_kind="text", text=text)
    elif isinstance(answer, str) and answer.strip() in request.get("options", []):
        text = answer.strip()
        response.update(response_kind="option", option=text)
    else:
        text = str(answer).strip()
        response.update(response_kind="text", text=text)
    return HumanMessage(content=text, additional_kwargs={"hide_from_ui": True, "human_input_response": response})


def headless_answer(request: dict[str, Any], responses: Responses) -> Any:
    """Pick the answer for ``request`` from ``responses`` (``None`` when it has none)."""
    if callable(responses):
        return responses(request)
    if isinstance(responses, str):
        return responses
    if request.get("mode") == "form":
        names = {f["name"] for f in request.get("fields", [])}
        return {k: v for k, v in responses.items() if k in names}
    for key in (request.get("question"), request.get("clarification_type"), "*"):
        if isinstance(key, str) and key in responses:
            return responses[key]
    return None
