"""OpenTelemetry spans for runs, model calls, tool calls and subagents.

Spans are made only when the process has a tracer provider (your own, or
``opentelemetry-instrument``'s) or when ``tracing.otel.enabled`` in ``config.yaml`` installs
one (:func:`configure_otel`). Span tree of a run::

    deerflow.run                  thread, run, user, trace id, model; status
    ├── deerflow.model_call       gen_ai.request.model, token usage
    └── deerflow.tool_call        gen_ai.tool.name, the call id
        └── deerflow.subagent     (the ``task`` tool) its own model and tool calls below

Parents are passed explicitly, never made "current", so the spans cannot leak into other
runs on the shared event loop. Export happens in the span processor: use a batching one
(as :func:`configure_otel` does), so no exporter ever blocks the runtime's loop.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from deerflow_nb.errors import ConfigError
from deerflow_nb.tracing.callbacks import mark_tracing_handler

if TYPE_CHECKING:
    from deerflow_nb.config.schema import OtelConfig

__all__ = ["OtelCallbackHandler", "RunSpan", "configure_otel", "otel_tracer", "use_tracer_provider"]

logger = logging.getLogger(__name__)
_INSTRUMENTATION = "deerflow_nb"
_CONFIGURED: list[Any] = []
_OWN: list[Any] = []
_LOCK = threading.Lock()


def use_tracer_provider(provider: Any | None) -> None:
    """Send DeerFlow's spans to ``provider`` instead of the process-global one (``None``: the global again)."""
    with _LOCK:
        _OWN[:] = [provider] if provider is not None else []


def otel_tracer() -> Any | None:
    """The tracer to make spans with, or ``None`` when no tracer provider is configured."""
    if _OWN:
        return _OWN[0].get_tracer(_INSTRUMENTATION)
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return provider.get_tracer(_INSTRUMENTATION)


def configure_otel(config: OtelConfig) -> None:
    """(startup) Install a tracer provider exporting over OTLP/HTTP, when ``enabled`` and none is set.

    A provider the process set already is kept (yours wins). The exporter reads the
    standard ``OTEL_EXPORTER_OTLP_*`` variables unless ``endpoint`` is given.
    """
    if not config.enabled:
        return
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigError("tracing.otel.enabled needs the OpenTelemetry SDK and OTLP exporter: "
                          "pip install 'deerflow-nb[tracing]'", key="tracing.otel.enabled") from exc
    with _LOCK:
        if _CONFIGURED or not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return
        provider = TracerProvider(resource=Resource.create({"service.name": config.service_name}))
        exporter = OTLPSpanExporter(endpoint=config.endpoint) if config.endpoint else OTLPSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        _CONFIGURED.append(provider)


def _error_status(span: Any, error: BaseException | str) -> None:
    from opentelemetry.trace import Status, StatusCode

    message = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else error
    span.set_status(Status(StatusCode.ERROR, message))
    if isinstance(error, BaseException):
        span.record_exception(error)


class RunSpan:
    """The ``deerflow.run`` span of one run (started and ended by the runtime)."""

    def __init__(self, tracer: Any, attributes: dict[str, Any]) -> None:
        self.span = tracer.start_span("deerflow.run", attributes={k: v for k, v in attributes.items()
                                                                  if v is not None})
        self.tracer = tracer

    def handler(self, model_name: str | None) -> OtelCallbackHandler:
        """The callback handler whose spans go below this run's."""
        return OtelCallbackHandler(self.tracer, self.span, model_name)

    def finish(self, status: str, error: str | None = None) -> None:
        """End the span with the run's outcome (``success``, ``error``, ``interrupted``)."""
        from opentelemetry.trace import Status, StatusCode

        self.span.set_attribute("deerflow.run.status", status)
        if status == "success":
            self.span.set_status(Status(StatusCode.OK))
        else:
            _error_status(self.span, error or f"run {status}")
        self.span.end()


class OtelCallbackHandler(BaseCallbackHandler):
    """LangChain callbacks turned into model, tool and subagent spans below a parent span."""

    run_inline = True  # span bookkeeping is cheap; order matters (a start before its end)

    def __init__(self, tracer: Any, root: Any, model_name: str | None) -> None:
        self.tracer, self.root, self.model_name = tracer, root, model_name
        self._spans: dict[UUID, Any] = {}
        self._parents: dict[UUID, UUID | None] = {}
        mark_tracing_handler(self)

    # -- bookkeeping -----------------------------------------------------------------
    def _parent_span(self, parent_run_id: UUID | None) -> Any:
        seen = 0
        while parent_run_id is not None and seen < 1000:
            span = self._spans.get(parent_run_id)
            if span is not None:
                return span
            parent_run_id, seen = self._parents.get(parent_run_id), seen + 1
        return self.root

    def _start(self, name: str, run_id: UUID, parent_run_id: UUID | None, attributes: dict[str, Any]) -> None:
        from opentelemetry import trace

        self._parents[run_id] = parent_run_id
        context = trace.set_span_in_context(self._parent_span(parent_run_id))
        self._spans[run_id] = self.tracer.start_span(
            name, context=context, attributes={k: v for k, v in attributes.items() if v is not None})

    def _end(self, run_id: UUID, error: BaseException | None = None, attributes: dict[str, Any] | None = None
             ) -> None:
        self._parents.pop(run_id, None)
        span = self._spans.pop(run_id, None)
        if span is None:
            return
        for key, value in (attributes or {}).items():
            if value is not None:
                span.set_attribute(key, value)
        if error is not None:
            _error_status(span, error)
        span.end()

    # -- chains: only a subagent's root chain becomes a span ----------------------------
    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                       **kwargs: Any) -> None:
        """A subagent's graph gets a span; other chains only link their children up."""
        name = kwargs.get("name") or ""
        if parent_run_id is not None and isinstance(name, str) and name.startswith("subagent:"):
            meta = metadata or {}
            self._start("deerflow.subagent", run_id, parent_run_id,
                        {"deerflow.subagent.type": name.removeprefix("subagent:"),
                         "deerflow.subagent.task_id": meta.get("subagent_task_id")})
        else:
            self._parents[run_id] = parent_run_id

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Close a subagent span."""
        self._end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A failed subagent graph."""
        self._end(run_id, error)

    # -- model calls ---------------------------------------------------------------------
    def on_chat_model_start(self, serialized: dict[str, Any] | None, messages: Any, *, run_id: UUID,
                            parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                            **kwargs: Any) -> None:
        """A model call starts."""
        meta = metadata or {}
        self._start("deerflow.model_call", run_id, parent_run_id,
                    {"gen_ai.operation.name": "chat",
                     "gen_ai.request.model": meta.get("ls_model_name") or self.model_name,
                     "gen_ai.system": meta.get("ls_provider")})

    def on_llm_start(self, serialized: dict[str, Any] | None, prompts: Any, *, run_id: UUID,
                     parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                     **kwargs: Any) -> None:
        """A completion-style model call starts."""
        self.on_chat_model_start(serialized, prompts, run_id=run_id, parent_run_id=parent_run_id,
                                 metadata=metadata)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call ends, with its token usage when the model reported it."""
        usage: dict[str, Any] = {}
        for generations in getattr(response, "generations", None) or []:
            for generation in generations:
                message = getattr(generation, "message", None)
                for key, value in (getattr(message, "usage_metadata", None) or {}).items():
                    if key in {"input_tokens", "output_tokens"} and isinstance(value, int):
                        usage[key] = usage.get(key, 0) + value
        self._end(run_id, attributes={"gen_ai.usage.input_tokens": usage.get("input_tokens"),
                                      "gen_ai.usage.output_tokens": usage.get("output_tokens")})

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A failed model call."""
        self._end(run_id, error)

    # -- tool calls ----------------------------------------------------------------------
    def on_tool_start(self, serialized: dict[str, Any] | None, input_str: str, *, run_id: UUID,
                      parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        """A tool call starts."""
        name = kwargs.get("name") or (serialized or {}).get("name")
        inputs = kwargs.get("inputs")
        call_id = kwargs.get("tool_call_id") or (inputs.get("tool_call_id") if isinstance(inputs, dict) else None)
        self._start("deerflow.tool_call", run_id, parent_run_id,
                    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                     "gen_ai.tool.call.id": call_id})

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A tool call ends; a tool message with ``status: error`` marks the span failed."""
        if getattr(output, "status", None) == "error":
            span = self._spans.get(run_id)
            if span is not None:
                _error_status(span, str(getattr(output, "content", "tool error"))[:500])
        self._end(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A tool call that raised."""
        self._end(run_id, error)
