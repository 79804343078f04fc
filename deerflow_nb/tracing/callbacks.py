"""LangSmith and Langfuse: callbacks attached at the root of a run's graph, when configured.

Both are switched on by their own environment variables and nothing else:

- LangSmith: ``LANGSMITH_TRACING=true`` (or ``LANGCHAIN_TRACING_V2``) with ``LANGSMITH_API_KEY``;
  ``LANGSMITH_PROJECT`` and ``LANGSMITH_ENDPOINT`` are read by the ``langsmith`` client.
- Langfuse: ``LANGFUSE_TRACING=true`` with ``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY``;
  ``LANGFUSE_BASE_URL`` (or ``LANGFUSE_HOST``) names the server (``pip install 'deerflow-nb[tracing]'``).

A switched-on provider without its keys is a :class:`~deerflow_nb.errors.ConfigError` when the
run is started (refused before anything is stored). Both SDKs send their batches from their
own background threads, so the runtime's event loop never waits on a tracing server.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
import weakref
from typing import Any

from deerflow_nb.errors import ConfigError

__all__ = ["build_tracing_callbacks", "enabled_providers", "flush_tracing", "is_tracing_handler",
           "mark_tracing_handler", "trace_metadata"]

_TRUE = {"1", "true", "yes", "on"}
_HEX32 = re.compile(r"[0-9a-f]{32}")
_HANDLERS: weakref.WeakSet[Any] = weakref.WeakSet()
_LANGFUSE: dict[tuple[str, str], Any] = {}
_LANGSMITH: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def _flag(*names: str) -> bool:
    return any(os.environ.get(name, "").strip().lower() in _TRUE for name in names)


def _env(*names: str) -> str | None:
    return next((os.environ[name] for name in names if os.environ.get(name)), None)


def enabled_providers() -> list[str]:
    """``langsmith`` and/or ``langfuse``, as their environment variables switch them on.

    Raises :class:`ConfigError` for a provider switched on without its keys.
    """
    providers = []
    if _flag("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
        if not _env("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
            raise ConfigError("LANGSMITH_TRACING is set but LANGSMITH_API_KEY is not", key="LANGSMITH_API_KEY")
        providers.append("langsmith")
    if _flag("LANGFUSE_TRACING"):
        missing = [name for name in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY") if not os.environ.get(name)]
        if missing:
            raise ConfigError(f"LANGFUSE_TRACING is set but {' and '.join(missing)} not", key=missing[0])
        if importlib.util.find_spec("langfuse") is None:
            raise ConfigError("LANGFUSE_TRACING needs the langfuse package: pip install 'deerflow-nb[tracing]'",
                              key="LANGFUSE_TRACING")
        providers.append("langfuse")
    return providers


def mark_tracing_handler(handler: Any) -> Any:
    """Remember ``handler`` as a tracing callback (a subagent's graph inherits only those)."""
    _HANDLERS.add(handler)
    return handler


def is_tracing_handler(handler: Any) -> bool:
    """Whether ``handler`` traces: made here, a LangSmith tracer or a Langfuse handler.

    LangChain hands a run's children copies of a LangSmith tracer, hence the class check.
    """
    if handler in _HANDLERS or type(handler).__module__.startswith("langfuse."):
        return True
    from langchain_core.tracers.langchain import LangChainTracer

    return isinstance(handler, LangChainTracer)


def _langfuse_client(public_key: str) -> Any:
    """One Langfuse client per key and server, on a tracer provider of its own.

    Its own provider keeps Langfuse from installing the process-global OpenTelemetry
    provider, which would switch on DeerFlow's OpenTelemetry spans as a side effect.
    """
    from langfuse import Langfuse  # present: enabled_providers() checked
    from opentelemetry.sdk.trace import TracerProvider
    host = _env("LANGFUSE_BASE_URL", "LANGFUSE_HOST") or "https://cloud.langfuse.com"
    with _LOCK:
        client = _LANGFUSE.get((public_key, host))
        if client is None:
            client = _LANGFUSE[(public_key, host)] = Langfuse(
                public_key=public_key, secret_key=os.environ["LANGFUSE_SECRET_KEY"], base_url=host,
                tracer_provider=TracerProvider())
        return client


def _langsmith_client() -> Any:
    """One LangSmith client per server and key (the environment is read now, not cached at import)."""
    from langsmith import Client

    url = _env("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT") or "https://api.smith.langchain.com"
    key = _env("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY") or ""
    with _LOCK:
        client = _LANGSMITH.get((url, key))
        if client is None:
            client = _LANGSMITH[(url, key)] = Client(api_url=url, api_key=key)
        return client


def build_tracing_callbacks(providers: list[str], *, trace_id: str | None = None) -> list[Any]:
    """New callback handlers for ``providers`` (see :func:`enabled_providers`), for one run.

    A ``trace_id`` of 32 lowercase hex digits (the generated ones) becomes the Langfuse
    trace's id, so a request's ``X-Trace-Id`` finds its trace.
    """
    handlers: list[Any] = []
    if "langsmith" in providers:
        from langchain_core.tracers.langchain import LangChainTracer

        handlers.append(LangChainTracer(project_name=_env("LANGSMITH_PROJECT", "LANGCHAIN_PROJECT"),
                                        client=_langsmith_client()))
    if "langfuse" in providers:
        public_key = os.environ["LANGFUSE_PUBLIC_KEY"]
        _langfuse_client(public_key)
        from langfuse.langchain import CallbackHandler

        context = {"trace_id": trace_id} if trace_id and _HEX32.fullmatch(trace_id) else None
        handlers.append(CallbackHandler(public_key=public_key, trace_context=context))  # type: ignore[arg-type]
    for handler in handlers:
        mark_tracing_handler(handler)
    return handlers


def trace_metadata(providers: list[str], *, thread_id: str, user_id: str, run_id: str, trace_id: str,
                   trace_name: str, tags: list[str]) -> dict[str, Any]:
    """The run's metadata for the tracers: the thread is the session, plus user, name and tags.

    LangSmith groups a thread's traces by ``session_id``; Langfuse lifts its reserved
    ``langfuse_*`` keys onto the trace at the graph root.
    """
    metadata: dict[str, Any] = {"thread_id": thread_id, "session_id": thread_id, "user_id": user_id,
                                "run_id": run_id, "deerflow_trace_id": trace_id}
    if "langfuse" in providers:
        metadata.update(langfuse_session_id=thread_id, langfuse_user_id=user_id, langfuse_trace_name=trace_name,
                        langfuse_tags=list(tags))
    return metadata


def flush_tracing() -> None:
    """(Blocking) send what the tracing clients still hold (tests, shutdown)."""
    with _LOCK:
        clients = [*_LANGFUSE.values(), *_LANGSMITH.values()]
    for client in clients:
        client.flush()
