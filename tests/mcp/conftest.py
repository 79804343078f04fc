from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import pytest

SERVER = Path(__file__).with_name("server.py")


def server_entry(**extra) -> dict:
    return {"type": "stdio", "command": sys.executable, "args": [str(SERVER)], **extra}


@pytest.fixture
def extensions_file(tmp_path: Path) -> Path:
    """extensions_config.json in the test's cwd (found by the search), with the test server."""
    path = Path.cwd() / "extensions_config.json"
    path.write_text(json.dumps({"mcpServers": {"notes": server_entry()}, "skills": {}}))
    return path


@pytest.fixture
def make_agent(make_agent):
    """The shared ``make_agent`` with throwaway in-memory persistence (callers may override it)."""
    return functools.partial(make_agent, persistence="memory")
