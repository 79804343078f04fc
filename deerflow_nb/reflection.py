"""Resolve ``"package.module:attribute"`` paths to Python objects.

Used by the config to name model classes, tools, sandbox providers and middlewares.
"""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

from deerflow_nb.errors import ConfigError

__all__ = ["INSTALL_HINTS", "resolve_class", "resolve_variable"]

T = TypeVar("T")

#: Top-level module -> the install command that provides it.
INSTALL_HINTS: dict[str, str] = {
    "langchain_openai": "pip install langchain-openai  (or: pip install 'deerflow-nb[openai]')",
    "langchain_anthropic": "pip install langchain-anthropic",
    "langchain_google_genai": "pip install langchain-google-genai",
    "langchain_ollama": "pip install langchain-ollama",
    "langchain_deepseek": "pip install langchain-deepseek",
    "langchain_mcp_adapters": "pip install langchain-mcp-adapters",
    "docker": "pip install 'deerflow-nb[docker]'",
    "xllamacpp": "pip install 'deerflow-nb[embedded]'",
    "asyncpg": "pip install 'deerflow-nb[postgres]'",
}


def resolve_variable(path: str) -> Any:
    """Import ``module.path:attr`` (or ``module.path.attr``) and return the attribute.

    Raises:
        ConfigError: the path is malformed, the module is missing (with an install
            hint when one is known) or the attribute does not exist.
    """
    if not isinstance(path, str) or not path.strip():
        raise ConfigError(f"expected a 'module:attribute' path, got {path!r}")
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"invalid import path {path!r}: expected 'package.module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or module_name).split(".")[0]
        hint = INSTALL_HINTS.get(missing)
        extra = f"; install it with: {hint}" if hint else ""
        missing_name = exc.name or module_name
        raise ConfigError(f"cannot import {path!r}: module {missing_name!r} is not installed{extra}") from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ConfigError(f"cannot import {path!r}: {module_name!r} has no attribute {attr!r}") from exc
    return obj


def resolve_class(path: str, base_class: type[T] | None = None) -> type[T]:
    """Resolve ``path`` to a class, checking it subclasses ``base_class`` when given."""
    obj = resolve_variable(path)
    if not isinstance(obj, type):
        raise ConfigError(f"{path!r} is not a class")
    if base_class is not None and not issubclass(obj, base_class):
        raise ConfigError(f"{path!r} is not a subclass of {base_class.__module__}.{base_class.__qualname__}")
    return obj
