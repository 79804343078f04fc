from __future__ import annotations

import functools

import pytest


@pytest.fixture
def make_agent(make_agent):
    """The shared ``make_agent`` with throwaway in-memory persistence (callers may override it)."""
    return functools.partial(make_agent, persistence="memory")
