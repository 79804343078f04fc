"""Tracing: LangSmith / Langfuse callbacks, OpenTelemetry spans and request trace ids.

Nothing is traced unless configured (environment variables for LangSmith and Langfuse,
a tracer provider or ``tracing.otel`` for OpenTelemetry); see ``docs/operations.md``.
"""

from deerflow_nb.tracing.callbacks import (
    build_tracing_callbacks,
    enabled_providers,
    flush_tracing,
    is_tracing_handler,
    mark_tracing_handler,
    trace_metadata,
)
from deerflow_nb.tracing.context import (
    MAX_TRACE_ID_LENGTH,
    TRACE_ID_HEADER,
    bind_trace_id,
    current_trace_id,
    new_trace_id,
    reset_trace_id,
    validate_trace_id,
)
from deerflow_nb.tracing.otel import OtelCallbackHandler, RunSpan, configure_otel, otel_tracer, use_tracer_provider
from deerflow_nb.tracing.run import TRACE_ID_KEY, RunTrace, subagent_trace_config

__all__ = [
    "MAX_TRACE_ID_LENGTH",
    "TRACE_ID_HEADER",
    "TRACE_ID_KEY",
    "OtelCallbackHandler",
    "RunSpan",
    "RunTrace",
    "bind_trace_id",
    "build_tracing_callbacks",
    "configure_otel",
    "current_trace_id",
    "enabled_providers",
    "flush_tracing",
    "is_tracing_handler",
    "mark_tracing_handler",
    "new_trace_id",
    "otel_tracer",
    "reset_trace_id",
    "subagent_trace_config",
    "trace_metadata",
    "use_tracer_provider",
    "validate_trace_id",
]
