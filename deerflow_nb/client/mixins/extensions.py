"""``agent.mcp``, ``agent.subagents``, ``agent.usage()`` and the thread-file gateway methods."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from deerflow_nb.client.mixins import PluginHost

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool

    from deerflow_nb.config import AppConfig
    from deerflow_nb.context import RunContext
    from deerflow_nb.mcp import McpManager
    from deerflow_nb.subagents import SubagentPlugin, SubagentSpec
    from deerflow_nb.subagents.plugin import ModelOverride
    from deerflow_nb.uploads import UploadSource
    from deerflow_nb.usage import Since, UsageStore

__all__ = ["ExtensionsMixin", "Subagents"]


class Subagents:
    """``agent.subagents``: the available subagent types and an optional model override."""

    def __init__(self, plugin: SubagentPlugin, engine: Any) -> None:
        self._plugin = plugin
        self._engine = engine

    def list(self) -> list[dict[str, Any]]:
        """Built-in and custom subagents: name, description, tools, model and budgets."""
        from deerflow_nb.subagents import resolve_limits, resolve_subagents

        config = self._engine.config
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
        return self._plugin.model

    @model.setter
    def model(self, value: ModelOverride | None) -> None:
        self._plugin.model = value
        self._plugin.executor.invalidate()


class ExtensionsMixin(PluginHost):
    """MCP, subagent, usage and thread-file surface of :class:`~deerflow_nb.DeerFlow`."""

    _engine: Any
    _loop: Any
    if TYPE_CHECKING:

        @property
        def user_id(self) -> str:
            """The user whose data this client reads and writes (defined by ``DeerFlow``)."""

    def _make_plugins(self) -> list[Any]:
        from deerflow_nb.mcp import McpManager, McpPlugin
        from deerflow_nb.subagents import SubagentPlugin
        from deerflow_nb.usage import UsagePlugin, UsageStore

        self._mcp = McpManager(self._engine.paths.home / "mcp", invalidate=self._engine.invalidate,
                               run=self._loop.run)
        self._usage_store: UsageStore = UsageStore(self._engine.paths)
        self._subagent_plugin = SubagentPlugin(self._resolve_subagent_model, self._subagent_tools)
        return [*super()._make_plugins(), McpPlugin(self._mcp), self._subagent_plugin,
                UsagePlugin(self._usage_store)]

    # -- subagents -----------------------------------------------------------------------
    def _resolve_subagent_model(self, spec: SubagentSpec, parent: RunContext) -> tuple[BaseChatModel, str]:
        from deerflow_nb.client.engine import RunOptions
        from deerflow_nb.subagents.plugin import model_label

        options = RunOptions(model_name=spec.model or parent.model_name, thinking_enabled=parent.thinking_enabled)
        model, name, _ = self._engine.resolve_model(options)
        return model, name or model_label(model)

    def _subagent_tools(self, config: AppConfig) -> list[BaseTool]:
        # Built-ins, configured tools and MCP tools; never plug-in tools such as a memory
        # tool, so a subagent cannot write to the user's memory.
        from deerflow_nb.tools import get_available_tools

        return [*get_available_tools(config, include_clarification=False), *self._mcp.load_tools()]

    @property
    def subagents(self) -> Subagents:
        """The subagent types (``.list()``) and the optional model override (``.model``)."""
        return Subagents(self._subagent_plugin, self._engine)

    # -- MCP -----------------------------------------------------------------------------
    @property
    def mcp(self) -> McpManager:
        """MCP servers: ``config()``, ``update(servers)``, ``tools()``, ``errors``, ``reload()``."""
        return self._mcp

    def get_mcp_config(self) -> dict[str, Any]:
        """``{"mcp_servers": {...}}`` exactly as ``GET /mcp/config`` returns it."""
        return self._mcp.get_mcp_config()

    def update_mcp_config(self, servers: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the MCP servers (``PUT /mcp/config``); the agent is rebuilt with the new tools."""
        return self._mcp.update_mcp_config(servers)

    # -- usage ---------------------------------------------------------------------------
    async def _ausage(self, thread_id: str | None, since: Since) -> dict[str, Any]:
        from deerflow_nb.usage import parse_since, summarize

        start = parse_since(since)
        records = await asyncio.to_thread(self._usage_store.records, self.user_id, thread_id=thread_id,
                                          since=start)
        return summarize(records, self._engine.config, thread_id=thread_id, since=start)

    def usage(self, since: Since = None) -> dict[str, Any]:
        """Token usage and cost of this user's runs (from ``since`` on), overall and per model."""
        return self._loop.run(self._ausage(None, since), method="DeerFlow.usage")

    async def ausage(self, since: Since = None) -> dict[str, Any]:
        """Async twin of :meth:`usage`."""
        return await self._loop.arun(self._ausage(None, since))

    # -- thread files (gateway-equivalent) ---------------------------------------------------
    async def _files_call(self, thread_id: str, method: str, *args: Any) -> Any:
        from deerflow_nb.uploads import ThreadUploads, read_artifact

        store = await self._engine.store()
        await store.create_or_get_thread(thread_id, self.user_id)  # another user's thread: not found
        if method == "artifact":
            return await asyncio.to_thread(read_artifact, self._engine.paths, self.user_id, thread_id, *args)
        uploads = ThreadUploads(self._engine.paths, self.user_id, thread_id)
        return await asyncio.to_thread(getattr(uploads, method), *args)

    def upload_files(self, thread_id: str, files: Iterable[UploadSource]) -> dict[str, Any]:
        """Upload files to a thread (``POST /threads/{id}/uploads``); all or nothing."""
        return self._loop.run(self._files_call(thread_id, "upload", list(files)), method="DeerFlow.upload_files")

    def list_uploads(self, thread_id: str) -> dict[str, Any]:
        """``{"files": [...], "count": N}`` as ``GET /threads/{id}/uploads`` returns it."""
        return self._loop.run(self._files_call(thread_id, "list"), method="DeerFlow.list_uploads")

    def delete_upload(self, thread_id: str, filename: str) -> dict[str, Any]:
        """Delete one upload (``DELETE /threads/{id}/uploads/{filename}``)."""
        return self._loop.run(self._files_call(thread_id, "delete", filename), method="DeerFlow.delete_upload")

    def get_artifact(self, thread_id: str, path: str) -> tuple[bytes, str]:
        """``(content, mime_type)`` of a ``/mnt/user-data/...`` file of the thread."""
        return self._loop.run(self._files_call(thread_id, "artifact", path), method="DeerFlow.get_artifact")
