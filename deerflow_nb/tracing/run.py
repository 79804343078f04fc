"""``RunTrace``: everything one run needs for tracing, built where the run is built.

Nothing is traced unless configured: with no LangSmith/Langfuse environment and no
OpenTelemetry tracer provider, :meth:`RunTrace.graph_config` is ``{}`` and no span is made.
"""

from __future__ import annotations

import os
from typing import Any

from deerflow_nb.tracing.callbacks import build_tracing_callbacks, enabled_providers, trace_metadata
from deerflow_nb.tracing.context import current_trace_id, new_trace_id
from deerflow_nb.tracing.otel import RunSpan, otel_tracer

__all__ = ["TRACE_ID_KEY", "RunTrace", "subagent_trace_config"]

#: ``RunContext.extra`` key of the run's trace id (the journal's ``run_end`` / ``run_error`` carry it).
TRACE_ID_KEY = "trace_id"


class RunTrace:
    """One run's trace id, tracer callbacks, metadata and OpenTelemetry run span.

    Raises :class:`~deerflow_nb.errors.ConfigError` when a tracing provider is switched on
    without its keys (see :func:`~deerflow_nb.tracing.callbacks.enabled_providers`).
    """

    def __init__(self, *, thread_id: str, user_id: str, run_id: str, assistant_id: str,
                 model_name: str | None, trace_id: str | None = None, providers: list[str] | None = None) -> None:
        self.trace_id = trace_id or current_trace_id() or new_trace_id()
        self.thread_id, self.user_id, self.run_id = thread_id, user_id, run_id
        self.assistant_id, self.model_name = assistant_id, model_name
        self.providers = enabled_providers() if providers is None else providers
        self._tracer = otel_tracer()
        self._span: RunSpan | None = None

    @property
    def tags(self) -> list[str]:
        """``env:<DEER_FLOW_ENV or ENVIRONMENT>`` (when set) and ``model:<name>``."""
        env = os.environ.get("DEER_FLOW_ENV") or os.environ.get("ENVIRONMENT")
        return [*([f"env:{env}"] if env else []), f"model:{self.model_name or 'default'}"]

    def start(self) -> None:
        """Start the run span (when OpenTelemetry is configured)."""
        if self._tracer is not None and self._span is None:
            self._span = RunSpan(self._tracer, {
                "deerflow.thread_id": self.thread_id, "deerflow.run_id": self.run_id,
                "deerflow.user_id": self.user_id, "enduser.id": self.user_id,
                "deerflow.trace_id": self.trace_id, "deerflow.assistant_id": self.assistant_id,
                "gen_ai.request.model": self.model_name})

    def graph_config(self, base: dict[str, Any]) -> dict[str, Any]:
        """``base`` (the graph's config) plus the tracers' ``callbacks``, ``metadata``, ``tags``, ``run_name``.

        ``base`` itself when nothing is traced. Call after :meth:`start` (the OpenTelemetry
        handler hangs its spans below the run span); ``base``'s own metadata keys win.
        """
        callbacks: list[Any] = build_tracing_callbacks(self.providers, trace_id=self.trace_id)
        if self._span is not None:
            callbacks.append(self._span.handler(self.model_name))
        if not callbacks:
            return base
        config: dict[str, Any] = {**base, "callbacks": callbacks}
        if self.providers:
            metadata = trace_metadata(self.providers, thread_id=self.thread_id, user_id=self.user_id,
                                      run_id=self.run_id, trace_id=self.trace_id, trace_name=self.assistant_id,
                                      tags=self.tags)
            config.update(run_name=self.assistant_id, tags=self.tags,
                          metadata={**metadata, **base.get("metadata", {})})
        return config

    def finish(self, status: str, error: str | None = None) -> None:
        """End the run span with the outcome."""
        if self._span is not None:
            self._span.finish(status, error)
            self._span = None


def subagent_trace_config(subagent_type: str, task_id: str) -> dict[str, Any]:
    """Config for a subagent's graph: the parent's tracing callbacks, below the ``task`` tool call.

    Call from the ``task`` tool's own context (the subagent then runs in an empty one).
    ``{}`` when the parent is not traced, so nothing else of the parent leaks in.
    """
    from langchain_core.callbacks import AsyncCallbackManager
    from langchain_core.runnables.config import var_child_runnable_config

    from deerflow_nb.tracing.callbacks import is_tracing_handler

    parent = (var_child_runnable_config.get() or {}).get("callbacks")
    handlers = [h for h in getattr(parent, "handlers", None) or [] if is_tracing_handler(h)]
    if not handlers:
        return {}
    manager = AsyncCallbackManager(handlers=handlers, inheritable_handlers=handlers,
                                   parent_run_id=getattr(parent, "parent_run_id", None))
    name = f"subagent:{subagent_type.lower().replace('_', '-')}"
    return {"callbacks": manager, "run_name": name, "tags": ["subagent"],
            "metadata": {"subagent_type": subagent_type, "subagent_task_id": task_id}}
