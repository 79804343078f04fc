"""Messages at the boundary: a message dict is checked as a LangChain message before it is stored.

LangChain's own constructors coerce more than they check: ``additional_kwargs=[]`` becomes ``{}``
and a content block such as ``{"type": "image_url", "image_url": 5}`` is kept as it is, to fail in
a provider's client at the next run. :func:`check_message_dict` refuses such dicts first, naming
the field: ``additional_kwargs`` and ``response_metadata`` are objects, ``name`` and ``id`` strings,
``tool_calls`` a list of ``{"name", "args", "id"}`` objects, and content is a string or a list of
strings and blocks. Blocks of LangChain's standard types (``text``, ``image``, ``file``, ``audio``,
``video``, ``text-plain``, ``reasoning``, ``tool_call`` ...) and the OpenAI ``image_url`` block are
validated against LangChain's own block definitions; blocks of other types (a provider's own,
such as Anthropic's ``tool_use``) need only a string ``type``, as LangChain allows.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Literal, NotRequired

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

__all__ = ["check_content", "check_message_dict"]

#: Media blocks: at least one of these keys says where the data is (v1 names, and v0's ``data``).
_SOURCES = ("url", "base64", "file_id", "data", "id")
_MEDIA = frozenset({"image", "file", "audio", "video"})
_SOURCE_TYPES = frozenset({"url", "base64", "id", "text"})


class _ImageUrl(TypedDict):
    url: str
    detail: NotRequired[Literal["auto", "low", "high"]]


class _ImageUrlBlock(TypedDict):
    """OpenAI's ``{"type": "image_url", "image_url": {"url": ...}}`` (or the URL as a string)."""

    type: Literal["image_url"]
    image_url: str | _ImageUrl


@functools.cache
def _adapters() -> dict[str, TypeAdapter[Any]]:
    from langchain_core.messages import content as blocks

    kinds: dict[str, Any] = {"image_url": _ImageUrlBlock}
    for name in ("TextContentBlock", "ImageContentBlock", "FileContentBlock", "AudioContentBlock",
                 "VideoContentBlock", "PlainTextContentBlock", "ReasoningContentBlock", "ToolCall",
                 "InvalidToolCall", "ToolCallChunk", "NonStandardContentBlock", "ServerToolCall",
                 "ServerToolCallChunk", "ServerToolResult", "Citation"):
        definition = getattr(blocks, name, None)
        if definition is None:
            continue
        literal = definition.__annotations__.get("type")
        for kind in getattr(literal, "__args__", ()):
            if isinstance(kind, str):
                kinds.setdefault(kind, definition)
    return {kind: TypeAdapter(definition) for kind, definition in kinds.items()}


def _path(where: str, loc: tuple[Any, ...]) -> str:
    """``where`` and pydantic's error location, without the union branch names (``str``, ``_ImageUrl``)."""
    fields = [p for p in loc if isinstance(p, int) or not (p in {"str", "dict"} or p[:1] == "_" or p[:1].isupper()
                                                            or "[" in p)]
    return where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in fields)


def check_content(content: Any, where: str = "content") -> None:
    """Raise ``ValueError`` naming the field when ``content`` is not a string or a list of valid blocks."""
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise ValueError(f"{where}: must be a string or a list of content blocks, got {type(content).__name__}")
    for i, block in enumerate(content):
        here = f"{where}[{i}]"
        if isinstance(block, str):
            continue
        if not isinstance(block, Mapping):
            raise ValueError(f"{here}: a content block must be a string or an object, got {type(block).__name__}")
        kind = block.get("type")
        if not isinstance(kind, str) or not kind:
            raise ValueError(f"{here}.type: a content block needs a string type")
        adapter = _adapters().get(kind)
        if adapter is None:
            continue  # a provider's own block type: LangChain passes it through
        try:
            adapter.validate_python(dict(block), strict=True)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise ValueError(f"{_path(here, tuple(error.get('loc', ())))}: {error.get('msg', 'invalid')}") from None
        if kind in _MEDIA:
            if not any(isinstance(block.get(key), str) and block.get(key) for key in _SOURCES):
                raise ValueError(f"{here}: the {kind} block needs one of url, base64 or file_id (a non-empty string)")
            source_type = block.get("source_type")
            if source_type is not None and source_type not in _SOURCE_TYPES:
                raise ValueError(f"{here}.source_type: must be one of {', '.join(sorted(_SOURCE_TYPES))}")
            for key in _SOURCES:
                if key in block and not isinstance(block[key], str):
                    raise ValueError(f"{here}.{key}: must be a string")


#: Field -> (accepted types, what the error says).
_FIELDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "additional_kwargs": (dict, "an object"), "response_metadata": (dict, "an object"),
    "name": ((str, type(None)), "a string or null"), "id": ((str, type(None)), "a string or null"),
    "example": (bool, "a boolean"), "tool_call_id": (str, "a string"),
    "tool_calls": (list, "a list"), "invalid_tool_calls": (list, "a list"),
}


class _ToolCall(TypedDict):
    name: str
    args: dict[str, Any]
    id: str | None
    type: NotRequired[Literal["tool_call"]]


class _Function(TypedDict):
    name: str
    arguments: str


class _OpenAIToolCall(TypedDict):
    """OpenAI's form, which LangChain converts: ``{"id", "type": "function", "function": {...}}``."""

    id: str
    type: NotRequired[Literal["function"]]
    function: _Function


_TOOL_CALL: TypeAdapter[_ToolCall] = TypeAdapter(_ToolCall)
_OPENAI_TOOL_CALL: TypeAdapter[_OpenAIToolCall] = TypeAdapter(_OpenAIToolCall)


def check_message_dict(message: Mapping[str, Any], where: str = "message") -> None:
    """Raise ``ValueError`` naming the field when a message dict would not be a sound LangChain message."""
    for key, (kinds, what) in _FIELDS.items():
        if key in message and not isinstance(message[key], kinds):
            raise ValueError(f"{where}.{key}: must be {what}")
    if "content" in message:
        check_content(message["content"], f"{where}.content")
    for i, call in enumerate(message.get("tool_calls") or ()):
        if not isinstance(call, Mapping):
            raise ValueError(f"{where}.tool_calls[{i}]: must be an object with name, args and id")
        try:
            (_OPENAI_TOOL_CALL if "function" in call else _TOOL_CALL).validate_python(dict(call), strict=True)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise ValueError(f"{_path(f'{where}.tool_calls[{i}]', tuple(error.get('loc', ())))}: "
                             f"{error.get('msg', 'invalid')}") from None
