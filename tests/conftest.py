"""Shared fixtures: every test runs with an isolated home, config search path and environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import deerflow_nb as df
from deerflow_nb.config import reset_app_config
from deerflow_nb.testing import ScriptedChatModel

_LEAKY_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "DEER_FLOW_CONFIG_PATH",
    "DEER_FLOW_EXTENSIONS_CONFIG_PATH",
    "DEER_FLOW_HOME",
    "JUPYTERHUB_USER",
    "JUPYTERHUB_API_TOKEN",
    # tracing is switched on by these: a developer's shell must not trace (or send) test runs
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
    "LANGSMITH_API_KEY",
    "LANGSMITH_ENDPOINT",
    "LANGSMITH_PROJECT",
    "LANGFUSE_TRACING",
    "LANGFUSE_PUBLIC_KEY",
    "LANGFUSE_SECRET_KEY",
    "LANGFUSE_BASE_URL",
    "LANGFUSE_HOST",
    "DEER_FLOW_ENV",
)


@pytest.fixture(autouse=True)
def _isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fresh home, empty cwd (no config.yaml found by search), no leaked credentials."""
    for name in _LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work" / "cwd"
    work.mkdir(parents=True)
    monkeypatch.setenv("DEER_FLOW_HOME", str(home))
    monkeypatch.chdir(work)
    reset_app_config()
    yield
    reset_app_config()


@pytest.fixture
def home() -> Path:
    """The isolated DEER_FLOW_HOME of this test."""
    return Path(os.environ["DEER_FLOW_HOME"])


@pytest.fixture
def make_agent(home: Path) -> Iterator:
    """``make_agent(responses=[...], **DeerFlow kwargs)``: a client on a ScriptedChatModel, closed after the test."""
    agents: list[df.DeerFlow] = []

    def _make(responses: list | None = None, **kwargs: object) -> df.DeerFlow:
        kwargs.setdefault("model", ScriptedChatModel(responses=responses or []))
        agent = df.DeerFlow(**kwargs)  # type: ignore[arg-type]
        agents.append(agent)
        return agent

    yield _make
    for agent in agents:
        agent.close()


@pytest.fixture
def spans() -> Iterator[Any]:
    """An in-memory OpenTelemetry exporter behind this process's tracer provider, for one test."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from deerflow_nb.tracing import use_tracer_provider

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use_tracer_provider(provider)
    yield exporter
    use_tracer_provider(None)
    provider.shutdown()
