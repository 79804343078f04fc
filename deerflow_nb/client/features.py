"""The feature objects of ``DeerFlow``: ``agent.skills``, ``agent.memory``, ``agent.mcp``, ``agent.subagents``.

Each is written once over the client's :class:`~deerflow_nb.client.backend.Backend`;
the facade's dict-returning "gateway-equivalent" methods are one-line delegates to them.
A few parts exist only where the agent runs (memory facts and the update queue, MCP
tool discovery, the subagent model override): over HTTP they raise
:class:`~deerflow_nb.errors.UsageError` saying so (see ``docs/api.md``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deerflow_nb.skills.client import SkillList

if TYPE_CHECKING:
    from deerflow_nb.client.backend import Backend
    from deerflow_nb.memory.client import FactList
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
    """The user's long-term memory.

    Both modes: :meth:`document`, :meth:`reload_document`, :meth:`settings`, :meth:`overview`
    (the ``/memory`` routes). Embedded only: facts, search, edits and the update queue.
    """

    def __repr__(self) -> str:
        return "<Memory>"

    def _local(self) -> Any:
        from deerflow_nb.memory.client import MemoryClient

        return MemoryClient(self._backend.local("memory"), self._backend.user_id, self._loop)

    # -- both modes (the /memory routes) --------------------------------------------------
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

    # -- embedded only ----------------------------------------------------------------------
    @property
    def data(self) -> dict[str, Any]:
        """``memory.json``: ``version``, ``revision``, ``lastUpdated``, ``user`` and ``history`` summaries."""
        return self._local().data  # type: ignore[no-any-return]

    @property
    def facts(self) -> FactList:
        """Every fact (default agent bucket), oldest first."""
        return self._local().facts  # type: ignore[no-any-return]

    def search(self, query: str, limit: int = 10) -> FactList:
        """Facts relevant to ``query`` (full-text ranking)."""
        return self._local().search(query, limit)  # type: ignore[no-any-return]

    def preview(self, message: str = "") -> str | None:
        """The ``<memory>`` block a new thread starting with ``message`` would get."""
        return self._local().preview(message)  # type: ignore[no-any-return]

    def reload(self) -> dict[str, Any]:
        """Re-read memory from disk (after editing the files by hand); returns :attr:`data`."""
        return self._local().reload()  # type: ignore[no-any-return]

    def export(self) -> dict[str, Any]:
        """Summaries and facts as one JSON-ready dict (``import_`` takes it back)."""
        return self._local().export()  # type: ignore[no-any-return]

    def config(self) -> dict[str, Any]:
        """The ``memory`` config section in effect."""
        return self._local().config()  # type: ignore[no-any-return]

    def status(self) -> dict[str, Any]:
        """Queue and store status: pending updates, last error, fact count, revision."""
        return self._local().status()  # type: ignore[no-any-return]

    def add_fact(self, content: str, **kwargs: Any) -> Any:
        """Remember a fact (``category=``, ``confidence=``)."""
        return self._local().add_fact(content, **kwargs)

    def update_fact(self, fact_id: str, **kwargs: Any) -> Any:
        """Change a fact (``content=``, ``category=``, ``confidence=``, ``expected_revision=``)."""
        return self._local().update_fact(fact_id, **kwargs)

    def delete_fact(self, fact_id: str, **kwargs: Any) -> None:
        """Forget a fact."""
        self._local().delete_fact(fact_id, **kwargs)

    def set_summary(self, section: str, text: str) -> dict[str, Any]:
        """Replace one summary (``workContext``, ``personalContext``, ``topOfMind``, ...)."""
        return self._local().set_summary(section, text)  # type: ignore[no-any-return]

    def clear(self) -> None:
        """Forget everything (summaries and facts)."""
        self._local().clear()

    def import_(self, data: Mapping[str, Any]) -> None:
        """Replace memory with ``data`` (the shape :meth:`export` returns)."""
        self._local().import_(data)

    def flush(self) -> int:
        """Process queued conversations now instead of after the debounce delay."""
        return self._local().flush()  # type: ignore[no-any-return]

    async def aflush(self) -> int:
        """Async twin of :meth:`flush`."""
        return await self._local().aflush()  # type: ignore[no-any-return]


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

    # -- embedded only (tools are discovered where the agent runs) -------------------------
    def tools(self) -> list[dict[str, Any]]:
        """The MCP tools the agent gets: name, server, description."""
        return self._backend.local("mcp").tools()  # type: ignore[no-any-return]

    def list_tools(self) -> dict[str, Any]:
        """``{"tools": [...], "errors": {...}}``."""
        return self._backend.local("mcp").list_tools()  # type: ignore[no-any-return]

    @property
    def errors(self) -> dict[str, str]:
        """Why servers failed to load, by server name."""
        return self._backend.local("mcp").errors  # type: ignore[no-any-return]

    def reload(self) -> None:
        """Forget the loaded tools (the next run reloads them)."""
        self._backend.local("mcp").reload()


class Subagents(_Feature):
    """``agent.subagents``: the available subagent types and an optional model override (embedded only)."""

    def list(self) -> list[dict[str, Any]]:
        """Built-in and custom subagents: name, description, tools, model and budgets."""
        from deerflow_nb.subagents import resolve_limits, resolve_subagents

        config = self._backend.local("runtime").config
        limits = resolve_limits(config)
        return [{"name": s.name, "description": s.description, "tools": s.tools, "model": s.model,
                 "max_turns": s.max_turns or limits.max_turns,
                 "timeout_seconds": s.timeout_seconds or limits.timeout_seconds}
                for s in resolve_subagents(config).values()]

    @property
    def model(self) -> ModelOverride | None:
        """The model every subagent uses instead of its default, or ``None``.

        A chat model, or a ``(spec, parent_context) -> model`` factory. With ``None`` a
        subagent uses its spec's ``model``, else the lead's.
        """
        return self._backend.local("subagents").model  # type: ignore[no-any-return]

    @model.setter
    def model(self, value: ModelOverride | None) -> None:
        plugin = self._backend.local("subagents")
        plugin.model = value
        plugin.executor.invalidate()
