"""The graph ``langgraph dev`` serves in the parity test: ``create_agent`` with the scripted test model.

The model is the one the DeerFlow side's config names (:class:`tests.server.models.FormThenReport`),
so both servers answer the same messages with the same text, token by token.
"""

from __future__ import annotations

from langchain.agents import create_agent

from tests.server.models import FormThenReport

graph = create_agent(FormThenReport(latency=0.0), tools=[], name="agent")
