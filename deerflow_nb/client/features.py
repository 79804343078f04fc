"""The feature objects of ``DeerFlow``: ``agent.skills``, ``agent.memory``, ``agent.mcp``, ``agent.subagents``.

Each is written once over the client's :class:`~deerflow_nb.client.backend.Backend`;
the facade's dict-returning "gateway-equivalent" methods are one-line delegates to them.
Every answer comes from :class:`~deerflow_nb.runtime.gateway.Gateway` through
``backend.gateway(name, ...)``: in process for an embedded client, over the matching
route for ``DeerFlow.connect()``. Genuinely local (Python objects or host paths), so
embedded only, :class:`~deerflow_nb.errors.UsageError` over HTTP: ``subagents.model``
and ``skills.public_root`` / ``custom_root`` (see ``docs/api.md``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deerflow_nb.memory.client import FactList
from deerflow_nb.memory.facts import Fact
from deerflow_nb.memory.storage import CACHED
from deerflow_nb.runtime.gateway import check_fact_id, check_message, check_search
from deerflow_nb.skills.client import SkillList

if TYPE_CHECKING:
    from deerflow_nb.client.backend import Backend
    from deerflow_nb.skills.types import Skill
    from deerflow_nb.subagents.plugin import ModelOverride

__all__ = ["Mcp", "Memory", "Skills", "Subagents"]


class _Feature:
    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._loop = backend.loop

    def _run(self, coro: Any, method: str) -> Any:
        return self._loop.run(coro, method=method)


class Skills(_Feature):
    """The user's skills. Changes take effect on the next run (the agent is rebuilt)."""

    def __repr__(self) -> str:
        skills = self.list()
        return f"<Skills {sum(s.enabled for s in skills)}/{len(skills)} enabled>"

    def __iter__(self) -> Any:
        return iter(self.list())

    def list(self, *, enabled_only: bool = False) -> SkillList:
        """Every skill (public first), or only the enabled ones (over HTTP ``path`` is the sandbox path)."""
        skills = self._run(self._backend.skills(), "Skills.list")
        return SkillList(s for s in skills if s.enabled or not enabled_only)

    def get(self, name: str) -> Skill:
        """One skill; :class:`~deerflow_nb.errors.NotFoundError` when unknown."""
        from deerflow_nb.errors import NotFoundError

        skill = next((s for s in self.list() if s.name == name), None)
        if skill is None:
            raise NotFoundError(f"skill {name!r} not found")
        return skill

    def enable(self, name: str) -> Skill:
        """Enable ``name`` for this user."""
        self.update(name, True)
        return self.get(name)

    def disable(self, name: str) -> Skill:
        """Disable ``name`` for this user."""
        self.update(name, False)
        return self.get(name)

    def install(self, path: str | os.PathLike[str]) -> Skill:
        """Install a local ``.skill`` archive as a custom skill (all or nothing)."""
        reply = self._run(self._backend.install_skill(path), "Skills.install")
        return self.get(reply["skill_name"])

    def uninstall(self, name: str) -> None:
        """Remove a custom skill (public skills can only be disabled)."""
        self._run(self._backend.gateway("uninstall_skill", name), "Skills.uninstall")

    def resolve(self, message: str) -> Skill | None:
        """The enabled skill ``message`` would activate (``/name task``), or ``None``."""
        from deerflow_nb.skills.activation import parse_slash

        command = parse_slash(message)
        if command is None:
            return None
        return next((s for s in self.list(enabled_only=True) if s.name == command.name), None)

    @property
    def public_root(self) -> os.PathLike[str]:
        """The public skills folder on the host (embedded only)."""
        return self._backend.local("skills").public_root  # type: ignore[no-any-return]

    @property
    def custom_root(self) -> os.PathLike[str]:
        """The user's custom skills folder on the host (embedded only)."""
        return self._backend.local("skills").custom_root  # type: ignore[no-any-return]

    # -- gateway shapes -------------------------------------------------------------------
    def response(self) -> dict[str, Any]:
        """``{"skills": [...]}`` exactly as ``GET /skills`` returns it."""
        return self._run(self._backend.gateway("list_skills"), "DeerFlow.list_skills")  # type: ignore[no-any-return]

    def response_of(self, name: str) -> dict[str, Any]:
        """One skill as ``GET /skills/{name}`` returns it."""
        return self._run(self._backend.gateway("get_skill", name), "DeerFlow.get_skill")  # type: ignore[no-any-return]

    def update(self, name: str, enabled: bool) -> dict[str, Any]:
        """Enable or disable a skill as ``PUT /skills/{name}`` does; returns the updated skill."""
        return self._run(self._backend.gateway("update_skill", name, enabled),  # type: ignore[no-any-return]
                         "DeerFlow.update_skill")

    def install_response(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """Install an archive as ``POST /skills/install`` does; ``{"success", "skill_name", "message"}``."""
        return self._run(self._backend.install_skill(path), "DeerFlow.install_skill")  # type: ignore[no-any-return]


class Memory(_Feature):
    """The user's long-term memory, the same in both modes (the ``/memory`` routes).

    Reads (:attr:`data`, :attr:`facts`, :meth:`search`, :meth:`preview`, :meth:`export`),
    edits (:meth:`add_fact`, :meth:`update_fact`, :meth:`delete_fact`, :meth:`set_summary`,
    :meth:`clear`, :meth:`import_`) and the update queue (:meth:`status`, :meth:`flush`).
    Edits are validated before anything is written (:class:`~deerflow_nb.errors.UsageError`
    naming the field); an unknown fact is :class:`~deerflow_nb.errors.NotFoundError`, a
    stale ``expected_revision`` :class:`~deerflow_nb.memory.MemoryConflictError` (a
    :class:`~deerflow_nb.errors.ConflictError`).
    """

    def __repr__(self) -> str:
        return "<Memory>"

    def _call(self, name: str, *args: Any) -> Any:
        return self._run(self._backend.gateway(name, *args), f"Memory.{name}")

    # -- DeerFlow's gateway shapes ---------------------------------------------------------
    def document(self) -> dict[str, Any]:
        """The memory document as ``GET /memory`` returns it."""
        return self._run(self._backend.gateway("get_memory"), "DeerFlow.get_memory")  # type: ignore[no-any-return]

    def reload_document(self) -> dict[str, Any]:
        """Re-read memory from disk, as ``POST /memory/reload`` does; returns the ``GET /memory`` document."""
        return self._run(self._backend.gateway("reload_memory"),  # type: ignore[no-any-return]
                         "DeerFlow.reload_memory")

    def settings(self) -> dict[str, Any]:
        """The memory settings as ``GET /memory/config`` returns them."""
        return self._run(self._backend.gateway("get_memory_config"),  # type: ignore[no-any-return]
                         "DeerFlow.get_memory_config")

    def overview(self) -> dict[str, Any]:
        """``{"config", "data"}`` as ``GET /memory/status`` returns it."""
        return self._run(self._backend.gateway("get_memory_status"),  # type: ignore[no-any-return]
                         "DeerFlow.get_memory_status")

    # -- reading ---------------------------------------------------------------------------
    @property
    def data(self) -> dict[str, Any]:
        """``memory.json``: ``version``, ``revision``, ``lastUpdated``, ``user`` and ``history`` summaries."""
        return self._call("memory_data")  # type: ignore[no-any-return]

    @property
    def facts(self) -> FactList:
        """Every fact (default agent bucket), oldest first."""
        return FactList.from_records(self._call("list_memory_facts")["facts"])

    def search(self, query: str, limit: int = 10) -> FactList:
        """Facts relevant to ``query`` (full-text ranking), at most ``limit`` (1-1000)."""
        check_search(query, limit)  # here too: a query string would carry 5 or "5" as text
        return FactList.from_records(self._call("search_memory_facts", query, limit)["facts"])

    def preview(self, message: str = "") -> str | None:
        """The ``<memory>`` block a new thread starting with ``message`` would get (``None``: nothing yet)."""
        check_message(message)
        return self._call("memory_preview", message)["memory"]  # type: ignore[no-any-return]

    def reload(self) -> dict[str, Any]:
        """Re-read memory from disk (after editing the files by hand); returns :attr:`data`."""
        self._call("reload_memory")
        return self.data

    def export(self) -> dict[str, Any]:
        """Summaries and facts as one JSON-ready dict (``import_`` takes it back)."""
        return self._call("export_memory")  # type: ignore[no-any-return]

    def config(self) -> dict[str, Any]:
        """The ``memory`` config section in effect (every key)."""
        return self._call("memory_section")  # type: ignore[no-any-return]

    def status(self) -> dict[str, Any]:
        """Queue and store status: pending updates, last error, fact count, revision."""
        return self._call("memory_queue_status")  # type: ignore[no-any-return]

    # -- editing ---------------------------------------------------------------------------
    def add_fact(self, content: str, *, category: str = "context", confidence: float = 1.0) -> Fact:
        """Remember a fact (content already known returns the existing fact)."""
        reply = self._call("add_memory_fact", {"content": content, "category": category, "confidence": confidence})
        return Fact(**reply)

    def update_fact(self, fact_id: str, *, content: str | None = None, category: str | None = None,
                    confidence: float | None = None, expected_revision: Any = CACHED) -> Fact:
        """Change a fact; ``expected_revision`` (default: the revision last read; ``None``: no check)."""
        body = {k: v for k, v in (("content", content), ("category", category), ("confidence", confidence))
                if v is not None}
        if expected_revision is not CACHED:
            body["expected_revision"] = expected_revision
        return Fact(**self._call("update_memory_fact", check_fact_id(fact_id), body))

    def delete_fact(self, fact_id: str, *, expected_revision: Any = CACHED) -> None:
        """Forget a fact."""
        self._call("delete_memory_fact", check_fact_id(fact_id),
                   {} if expected_revision is CACHED else {"expected_revision": expected_revision})

    def set_summary(self, section: str, text: str) -> dict[str, Any]:
        """Replace one summary (``workContext``, ``personalContext``, ``topOfMind``, ``recentMonths``, ...)."""
        return self._call("set_memory_summary", section, {"text": text})  # type: ignore[no-any-return]

    def clear(self) -> None:
        """Forget everything (summaries and facts)."""
        self._call("clear_memory")

    def import_(self, data: Mapping[str, Any]) -> None:
        """Replace memory with ``data`` (the shape :meth:`export` returns); validated before anything changes."""
        self._call("import_memory", dict(data) if isinstance(data, Mapping) else data)

    # -- updates ---------------------------------------------------------------------------
    def flush(self) -> int:
        """Process queued conversations now instead of after the debounce delay; how many were processed."""
        return int(self._call("flush_memory")["processed"])

    async def aflush(self) -> int:
        """Async twin of :meth:`flush`."""
        return int((await self._loop.arun(self._backend.gateway("flush_memory")))["processed"])


class Mcp(_Feature):
    """MCP servers (``extensions_config.json``; server-wide in server mode)."""

    def __repr__(self) -> str:
        return "<Mcp>"

    def get_mcp_config(self) -> dict[str, Any]:
        """``{"mcp_servers": {...}}`` exactly as ``GET /mcp/config`` returns it."""
        return self._run(self._backend.gateway("get_mcp_config"),  # type: ignore[no-any-return]
                         "DeerFlow.get_mcp_config")

    def update_mcp_config(self, servers: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the MCP servers (``PUT /mcp/config``); the agent is rebuilt with the new tools."""
        return self._run(self._backend.gateway("update_mcp_config", servers),  # type: ignore[no-any-return]
                         "DeerFlow.update_mcp_config")

    def config(self) -> dict[str, dict[str, Any]]:
        """The servers by name."""
        return dict(self.get_mcp_config()["mcp_servers"])

    def update(self, servers: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """Replace the servers; returns them."""
        return dict(self.update_mcp_config(servers)["mcp_servers"])

    # -- tools (discovered where the agent runs: the server, over HTTP) --------------------
    def list_tools(self) -> dict[str, Any]:
        """``{"tools": [...], "errors": {...}}`` as ``GET /mcp/tools`` returns it (discovers them if needed)."""
        return self._run(self._backend.gateway("list_mcp_tools"), "Mcp.list_tools")  # type: ignore[no-any-return]

    def tools(self) -> list[dict[str, Any]]:
        """The MCP tools the agent gets: name, server, description."""
        return list(self.list_tools()["tools"])

    @property
    def errors(self) -> dict[str, str]:
        """Why servers failed to load, by server name (after discovering the tools if needed)."""
        return dict(self.list_tools()["errors"])

    def reload(self) -> None:
        """Forget the loaded tools (the next run or listing discovers them again)."""
        self._run(self._backend.gateway("reload_mcp"), "Mcp.reload")


class Subagents(_Feature):
    """``agent.subagents``: the available subagent types (both modes) and a model override (embedded only)."""

    def list(self) -> list[dict[str, Any]]:
        """Built-in and custom subagents: name, description, tools, model and budgets (``GET /subagents``)."""
        return list(self._run(self._backend.gateway("list_subagents"), "Subagents.list")["subagents"])

    @property
    def model(self) -> ModelOverride | None:
        """The model every subagent uses instead of its default, or ``None`` (embedded only).

        A chat model, or a ``(spec, parent_context) -> model`` factory. With ``None`` a
        subagent uses its spec's ``model``, else the lead's. A Python object cannot travel
        to a server: over HTTP reading or setting it raises :class:`~deerflow_nb.errors.UsageError`
        (configure ``subagents.custom[].model`` in the server's ``config.yaml`` instead).
        """
        return self._backend.local("subagents").model  # type: ignore[no-any-return]

    @model.setter
    def model(self, value: ModelOverride | None) -> None:
        plugin = self._backend.local("subagents")
        plugin.model = value
        plugin.executor.invalidate()
