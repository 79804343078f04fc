"""Audit log of sandboxed shell and file operations; refuses a few destructive commands."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from deerflow_nb.agent.middlewares._base import context_of, tool_error

__all__ = ["AUDITED_TOOLS", "SandboxAuditMiddleware", "assess_command"]

logger = logging.getLogger("deerflow_nb.audit")
AUDITED_TOOLS = frozenset({"bash", "write_file", "str_replace", "read_file", "ls", "glob", "grep", "present_files"})
_BLOCKED = [
    (re.compile(r"\brm\s+(-[a-zA-Z]*[rf][a-zA-Z]*\s+)+(/|/\*|~|\$HOME)(\s|$)"), "recursive delete of / or home"),
    (re.compile(r"\bmkfs(\.\w+)?\b"), "filesystem creation"),
    (re.compile(r"\bdd\b.*\bof=/dev/(sd|nvme|hd|vd)"), "raw disk write"),
    (re.compile(r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"), "fork bomb"),
]
_RISKY = [
    (re.compile(r"\b(curl|wget)\b[^|]*\|\s*(ba|z)?sh\b"), "pipes a download into a shell"),
    (re.compile(r"\bsudo\b"), "uses sudo"),
    (re.compile(r"\bchmod\s+-R\s+777\b"), "world-writable recursive chmod"),
]


def assess_command(command: str) -> tuple[str, str | None]:
    """Classify a shell command as ``("blocked"|"risky"|"ok", reason)``."""
    for pattern, reason in _BLOCKED:
        if pattern.search(command):
            return "blocked", reason
    for pattern, reason in _RISKY:
        if pattern.search(command):
            return "risky", reason
    return "ok", None


class SandboxAuditMiddleware(AgentMiddleware):
    """Logs every audited tool call (logger ``deerflow_nb.audit``) before it runs."""

    def _check(self, request: Any) -> Any:
        call = request.tool_call
        if call["name"] not in AUDITED_TOOLS:
            return None
        ctx = context_of(request)
        args = call.get("args") or {}
        target = args.get("command") or args.get("path") or args.get("filepaths")
        verdict, reason = assess_command(str(args.get("command", ""))) if call["name"] == "bash" else ("ok", None)
        level = logging.WARNING if verdict != "ok" else logging.INFO
        logger.log(level, "audit user=%s thread=%s run=%s tool=%s verdict=%s reason=%s target=%r",
                   ctx.user_id, ctx.thread_id, ctx.run_id, call["name"], verdict, reason, target)
        if verdict == "blocked":
            return tool_error(request, f"Error: command refused by the sandbox audit ({reason}).",
                              error_type="permission", recoverable_by_model=True,
                              recommended_next_action="use a safer command")
        return None

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Audit, then run the tool unless the command is refused."""
        return self._check(request) or handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        return self._check(request) or await handler(request)
