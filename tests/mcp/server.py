"""A tiny stdio MCP server for the tests: ``add``, ``write_note`` (into its cwd) and ``where``."""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.fastmcp import FastMCP

server = FastMCP("deerflow-test")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def write_note(name: str, text: str) -> str:
    """Write a note file into the server's working directory and return its absolute path."""
    target = Path.cwd() / name
    target.write_text(text, encoding="utf-8")
    return f"wrote {target}"


@server.tool()
def where() -> str:
    """The server's working directory and process id."""
    return f"{Path.cwd()} pid={os.getpid()}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


if __name__ == "__main__":
    server.run("stdio")
