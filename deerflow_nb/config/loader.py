"""Find, read, validate and cache ``config.yaml``.

Path order: explicit path > ``DEER_FLOW_CONFIG_PATH`` > ``./config.yaml`` >
``../config.yaml``; with none found, built-in defaults.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from deerflow_nb.config.compat import split_unimplemented
from deerflow_nb.config.schema import AppConfig
from deerflow_nb.errors import ConfigError

__all__ = [
    "CONFIG_PATH_ENV",
    "CURRENT_CONFIG_VERSION",
    "format_loc",
    "get_app_config",
    "load_config",
    "reset_app_config",
    "resolve_config_path",
    "resolve_env_values",
    "set_app_config",
]

logger = logging.getLogger(__name__)

CONFIG_PATH_ENV = "DEER_FLOW_CONFIG_PATH"
#: The ``config_version`` of the shipped ``config.example.yaml`` (a test pins the two together).
CURRENT_CONFIG_VERSION = 1


def resolve_config_path(path: str | os.PathLike[str] | None = None) -> Path | None:
    """Return the config file to use, or ``None`` for built-in defaults.

    An explicit ``path`` or a set ``DEER_FLOW_CONFIG_PATH`` must exist
    (:class:`FileNotFoundError` otherwise); the search locations are optional.
    """
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file():
            raise FileNotFoundError(f"config file not found: {explicit}")
        return explicit.resolve()
    env = os.environ.get(CONFIG_PATH_ENV)
    if env:
        from_env = Path(env).expanduser()
        if not from_env.is_file():
            raise FileNotFoundError(f"config file named by {CONFIG_PATH_ENV} not found: {from_env}")
        return from_env.resolve()
    for candidate in (Path.cwd() / "config.yaml", Path.cwd().parent / "config.yaml"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def format_loc(loc: tuple[Any, ...] | list[Any]) -> str:
    """Render a pydantic error location as a key path: ``('models', 0, 'use')`` -> ``models[0].use``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "<root>"


def resolve_env_values(data: Any, *, source: str = "config", _loc: tuple[Any, ...] = ()) -> Any:
    """Replace string values starting with ``$`` by the named environment variable.

    ``$$text`` escapes to the literal ``$text``. A missing variable raises
    :class:`ConfigError` naming the key.
    """
    if isinstance(data, dict):
        return {k: resolve_env_values(v, source=source, _loc=(*_loc, k)) for k, v in data.items()}
    if isinstance(data, list):
        return [resolve_env_values(v, source=source, _loc=(*_loc, i)) for i, v in enumerate(data)]
    if isinstance(data, str) and data.startswith("$"):
        if data.startswith("$$"):
            return data[1:]
        name = data[1:].strip("{}")
        if name not in os.environ:
            key = format_loc(_loc)
            raise ConfigError(
                f"{source}: {key} refers to environment variable ${name}, which is not set",
                key=key,
                path=source,
            )
        return os.environ[name]
    return data


_WARNED_OLD: set[str] = set()
_WARNED_IGNORED: set[tuple[str, tuple[str, ...]]] = set()


def _parse(text: str, source: str) -> AppConfig:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: invalid YAML: {exc}", path=source) from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping, got {type(raw).__name__}", path=source)
    # sections and keys of the original DeerFlow that are not implemented here: named once, not
    # validated, and left out before their $VARIABLES are resolved (an unset one must not fail them)
    try:
        raw, ignored = split_unimplemented(raw, set(AppConfig.model_fields))
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}", key=exc.key, path=source) from None
    if ignored and (source, tuple(ignored)) not in _WARNED_IGNORED:
        _WARNED_IGNORED.add((source, tuple(ignored)))
        logger.warning("%s: ignoring settings this version does not implement: %s", source, ", ".join(ignored))
    raw = resolve_env_values(raw, source=source)
    try:
        config = AppConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = format_loc(first["loc"])
        details = "; ".join(f"{format_loc(e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise ConfigError(f"{source}: invalid config at {key}: {details}", key=key, path=source) from exc
    # Only a file that states an older version is warned about, once: a file without the key is
    # read as current (the docs' examples leave it out), and the loader re-reads changed files.
    if "config_version" in raw and config.config_version < CURRENT_CONFIG_VERSION and source not in _WARNED_OLD:
        _WARNED_OLD.add(source)
        logger.warning(
            "%s has config_version %s, older than the example's %s; compare it with config.example.yaml",
            source,
            config.config_version,
            CURRENT_CONFIG_VERSION,
        )
    return config


def load_config(path: str | os.PathLike[str] | None = None) -> AppConfig:
    """Load and validate a config file (found by :func:`resolve_config_path`), or defaults."""
    resolved = resolve_config_path(path)
    if resolved is None:
        return AppConfig()
    return _parse(resolved.read_text(encoding="utf-8"), str(resolved))


@dataclass(frozen=True)
class _Signature:
    path: Path | None
    size: int
    digest: str


class _ConfigCache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.signature: _Signature | None = None
        self.config: AppConfig | None = None
        self.override: AppConfig | None = None


_cache = _ConfigCache()


def _signature(path: Path | None) -> tuple[_Signature, bytes]:
    if path is None:
        return _Signature(None, 0, ""), b""
    data = path.read_bytes()
    return _Signature(path, len(data), hashlib.sha256(data).hexdigest()), data


def get_app_config(path: str | os.PathLike[str] | None = None) -> AppConfig:
    """Return the current config, re-reading it when the resolved path or file content changed.

    The content signature is size + sha256, so an edit that keeps the mtime is still seen.
    """
    with _cache.lock:
        if _cache.override is not None and path is None:
            return _cache.override
        resolved = resolve_config_path(path)
        sig, data = _signature(resolved)
        if _cache.config is not None and _cache.signature == sig:
            return _cache.config
        config = AppConfig() if resolved is None else _parse(data.decode("utf-8"), str(resolved))
        _cache.signature, _cache.config = sig, config
        return config


def set_app_config(config: AppConfig | None) -> None:
    """Pin the config returned by :func:`get_app_config` (``None`` un-pins it)."""
    with _cache.lock:
        _cache.override = config


def reset_app_config() -> None:
    """Forget the cached config and any pinned override."""
    with _cache.lock:
        _cache.signature = _cache.config = _cache.override = None
