"""Which config sections apply only at start-up.

Everything else is read through :func:`~deerflow_nb.config.get_app_config` on each
run, so edits to ``config.yaml`` take effect on the next message.
"""

from __future__ import annotations

__all__ = ["STARTUP_ONLY_FIELDS"]

#: Top-level ``config.yaml`` sections that need a restart to take effect.
STARTUP_ONLY_FIELDS: frozenset[str] = frozenset(
    {
        "home",
        "database",
        "checkpointer",
        "checkpoint_channel_mode",
        "checkpoint_delta_snapshot_frequency",
        "run_events",
        "stream_bridge",
        "runs",
        "sandbox",
        "log_level",
        "logging",
        "tracing",  # tracing.otel installs the process's tracer provider once
    }
)
