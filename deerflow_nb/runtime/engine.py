"""``Runtime``: the composition root: config, model, sandbox, persistence, plug-ins and runs.

Everything runs on one private event loop (:attr:`Runtime.loop`). The embedded client
(through its in-process backend) and the Jupyter server extension both drive runs
through a runtime; the extension passes the requesting ``user_id`` to every call.
The feature services (skills, memory, MCP, subagents, usage) are built here and
plugged into the lead agent; :attr:`Runtime.gateway` answers the DeerFlow routes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import logging
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.errors import InvalidUpdateError

from deerflow_nb.agent import AgentOptions, make_lead_agent
from deerflow_nb.agent.checkpoint_mode import ensure_thread_compatible, freeze_checkpoint_mode, materialized_values
from deerflow_nb.agent.plugins import AgentPlugin
from deerflow_nb.config import AppConfig, Paths, get_app_config, load_config, resolve_home, validate_id
from deerflow_nb.context import SAMPLING_SEED_KEY, RunContext
from deerflow_nb.errors import NotFoundError, ThreadBusyError, UsageError
from deerflow_nb.messages import check_content
from deerflow_nb.persistence import Store, open_store, resolve_database
from deerflow_nb.runtime.conversation import replay_metadata
from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.goal import GoalLoop
from deerflow_nb.runtime.loop import BackgroundLoop
from deerflow_nb.runtime.run_manager import RunManager, RunRecord
from deerflow_nb.runtime.state_update import state_values
from deerflow_nb.runtime.stream_bridge import StreamBridge
from deerflow_nb.runtime.streaming import STREAM_SUBGRAPHS_KEY
from deerflow_nb.runtime.titles import write_fallback_title
from deerflow_nb.runtime.worker import (
    agent_run,
    capture_rollback_point,
    mark_interrupted,
    marker_graph,
    restore_rollback_point,
)
from deerflow_nb.runtime.workspace import snapshot
from deerflow_nb.sandbox import SandboxProvider

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from deerflow_nb.mcp import McpManager
    from deerflow_nb.memory.service import MemoryService
    from deerflow_nb.runtime.conversation import Conversations
    from deerflow_nb.runtime.gateway import Gateway
    from deerflow_nb.runtime.goal import Goals
    from deerflow_nb.runtime.schedules import ScheduledTaskService
    from deerflow_nb.skills.manager import SkillManager
    from deerflow_nb.subagents import SubagentPlugin, SubagentSpec
    from deerflow_nb.usage import UsageStore

__all__ = ["RunOptions", "Runtime"]

logger = logging.getLogger(__name__)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a background future's exception as seen (its owner may never await it)."""
    if not future.cancelled():
        future.exception()


def _history_item(item: Any) -> dict[str, Any]:
    """One checkpoint tuple as a history item (``checkpoint_id``, ``parent_checkpoint_id``, ``values``, ...)."""
    return {
        "checkpoint_id": item.config["configurable"].get("checkpoint_id"),
        "parent_checkpoint_id": (item.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
        "created_at": item.checkpoint.get("ts"),
        "step": (item.metadata or {}).get("step"),
        "metadata": dict(item.metadata or {}),
        "values": state_values(item.checkpoint.get("channel_values", {})),
    }


class _RunConfig:
    """The config one run reads everywhere (plug-ins, middlewares, tools), resolved once.

    Set (in a context variable) while a run starts and inherited by the run's task;
    ``live`` drops at the end of the run, so work the run leaves behind (a debounced
    memory update) reads the current config again.
    """

    __slots__ = ("config", "engine", "live")

    def __init__(self, engine: Runtime, config: AppConfig) -> None:
        self.engine, self.config, self.live = engine, config, True


#: ``context.extra`` flag: the plug-ins' blocking finish ran for this run.
_FINISHED_BLOCKING = "deerflow.finished_blocking"
_RUN_CONFIG: contextvars.ContextVar[_RunConfig | None] = contextvars.ContextVar("deerflow_run_config", default=None)


@dataclass(frozen=True)
class RunOptions:
    """Per-run options (the reference's runtime configuration)."""

    model_name: str | None = None
    thinking_enabled: bool = False
    plan_mode: bool = False
    subagent_enabled: bool = False
    recursion_limit: int = 100
    timeout: float | None = None
    #: No human at hand: no ``ask_clarification``; the model proceeds on stated assumptions.
    non_interactive: bool = False
    #: This run's ``task`` calls per model response (1-4; default: ``subagents.max_concurrent_subagents``).
    max_concurrent_subagents: int | None = None

    def merged(self, **overrides: Any) -> RunOptions:
        """A copy with the non-``None`` overrides applied (unknown names and invalid values are an error)."""
        check_run_option_names(overrides)
        check_max_concurrent_subagents(overrides.get("max_concurrent_subagents"))
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def check_run_option_names(options: Iterable[str]) -> None:
    """:class:`UsageError` naming the options :class:`RunOptions` does not have (both modes check with this)."""
    known = RunOptions.__dataclass_fields__
    unknown = set(options) - set(known)
    if unknown:
        raise UsageError(f"unknown run option(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")


def check_max_concurrent_subagents(value: Any) -> None:
    """Refuse a ``max_concurrent_subagents`` run option that is not a whole number from 1 to 4."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 4):
        raise UsageError(f"max_concurrent_subagents must be a whole number from 1 to 4, got {value!r}")


class Runtime:
    """Everything a client or the server needs; all coroutines run on :attr:`loop`.

    Args:
        config_path: ``config.yaml`` (default: discovered, else built-in defaults).
        model: a configured model name or a LangChain chat model instance.
        defaults: run options applied to every run (per-run options override them).
        home: data directory (default: ``DEER_FLOW_HOME`` > config ``home`` > ``~/.deer-flow``).
        user_id: the default user (the server passes the requesting user to every call).
        persistence: ``sqlite``, ``postgres`` or ``memory`` (default: config ``database.backend``).
        sandbox_provider: a provider instance instead of the configured one.
    """

    def __init__(
        self,
        *,
        config_path: str | Path | None = None,
        model: str | BaseChatModel | None = None,
        defaults: RunOptions | None = None,
        home: str | Path | None = None,
        user_id: str = "default",
        persistence: str | None = None,
        sandbox_provider: SandboxProvider | None = None,
        loop: BackgroundLoop | None = None,
    ) -> None:
        self.config_path = Path(config_path) if config_path is not None else None
        startup = load_config(self.config_path)  # fail fast on a bad config
        self.user_id = validate_id(user_id, "user_id")
        self.paths = Paths(resolve_home(startup.home, home))
        self.model = model
        self.defaults = defaults or RunOptions()
        #: The private event loop every coroutine of this runtime runs on.
        self.loop = loop or BackgroundLoop()
        self.persistence = persistence or startup.database.backend
        if self.persistence not in {"sqlite", "memory", "postgres"}:
            raise UsageError(f"persistence must be 'sqlite', 'postgres' or 'memory', got {self.persistence!r}")
        self.database = resolve_database(self.persistence, startup.database.url if self.persistence != "memory"
                                         else None, startup.database.sqlite_path, self.paths.home)
        self._startup = startup
        if startup.tracing.otel.enabled:  # startup-only: installs the process's tracer provider once
            from deerflow_nb.tracing import configure_otel

            configure_otel(startup.tracing.otel)
        #: ``(checkpoint_channel_mode, delta snapshot frequency)``, frozen for the process (restart to change).
        self.checkpoint_mode = freeze_checkpoint_mode(startup.checkpoint_channel_mode,
                                                      startup.checkpoint_delta_snapshot_frequency)
        self._sandbox_provider = sandbox_provider
        self._store: Store | None = None
        self._store_lock: asyncio.Lock | None = None
        self._graphs: dict[tuple[Any, ...], Any] = {}
        self._last_config: AppConfig | None = None
        self._last_config_key = ""
        bridge = startup.stream_bridge
        self.bridge = StreamBridge(bridge.queue_maxsize, heartbeat_seconds=bridge.heartbeat_seconds,
                                   reader_queue_maxsize=bridge.reader_queue_maxsize)
        leases = startup.runs
        self.runs = RunManager(self.bridge, lease_seconds=leases.lease_seconds,
                               lease_renew_seconds=leases.lease_renew_seconds,
                               recover_interval_seconds=leases.recover_interval_seconds,
                               on_recovered=self._mark_recovered, on_thread_free=self._dispatch_thread)
        self.recovered_runs: list[str] = []
        self.plugins: list[AgentPlugin] = self._make_plugins()

    # -- feature services (the composition root) ---------------------------------------
    def skill_manager(self, user_id: str | None = None) -> SkillManager:
        """The skills of ``user_id`` (default: this runtime's user); one manager per user."""
        from deerflow_nb.skills.manager import SkillManager

        user_id = user_id or self.user_id
        manager = self._skill_managers.get(user_id)
        if manager is None:
            manager = self._skill_managers[user_id] = SkillManager(self.paths, user_id, lambda: self.config)
        return manager

    @cached_property
    def _skill_managers(self) -> dict[str, SkillManager]:
        return {}

    @cached_property
    def memory(self) -> MemoryService:
        """Long-term memory (summaries, facts, the update queue) of every user."""
        from deerflow_nb.memory.service import MemoryService

        def resolve_model(name: str | None) -> Any:
            return self.resolve_model(RunOptions(model_name=name))[0]

        return MemoryService(self.paths, lambda: self.config, resolve_model, self.get_state)

    @cached_property
    def mcp(self) -> McpManager:
        """MCP servers (``extensions_config.json``; server-wide), their tools and sessions."""
        from deerflow_nb.mcp import McpManager

        return McpManager(self.paths.home / "mcp", invalidate=self.invalidate, run=self.loop.run)

    @cached_property
    def usage(self) -> UsageStore:
        """Per-run token usage records (``{home}/users/{user_id}/usage.jsonl``)."""
        from deerflow_nb.usage import UsageStore

        return UsageStore(self.paths)

    @cached_property
    def subagents(self) -> SubagentPlugin:
        """The subagent plug-in (its ``model`` override and executor)."""
        from deerflow_nb.subagents import SubagentPlugin

        return SubagentPlugin(self._resolve_subagent_model, self._subagent_tools)

    @cached_property
    def gateway(self) -> Gateway:
        """The DeerFlow routes' answers (models, skills, memory, MCP, files, usage, journal)."""
        from deerflow_nb.runtime.gateway import Gateway

        return Gateway(self)

    @cached_property
    def goals(self) -> Goals:
        """Threads' goals (goal mode): ``get`` / ``set`` / ``clear``, the answers of ``/threads/{id}/goal``."""
        from deerflow_nb.runtime.goal import Goals

        return Goals(self)

    @cached_property
    def schedules(self) -> ScheduledTaskService:
        """Scheduled runs: definitions, history, manual triggers and the scheduler pass (``/scheduled-tasks``)."""
        from deerflow_nb.runtime.schedules import ScheduledTaskService

        return ScheduledTaskService(self)

    def start_scheduler(self, poll_seconds: float | None = None, user_id: str | None = None) -> None:
        """Run the scheduler loop in this process (the server extension does; a kernel only if asked).

        ``user_id``: dispatch only that user's tasks (a JupyterHub single-user server); default: everyone's.
        """
        async def start() -> None:
            await self.store()
            self.schedules.start(poll_seconds, user_id)

        self.loop.run(start(), method="Runtime.start_scheduler")

    @cached_property
    def conversations(self) -> Conversations:
        """Reruns, branches and forks: prepare_regenerate, prepare_edit, branches, checkout, fork."""
        from deerflow_nb.runtime.conversation import Conversations

        return Conversations(self)

    def _make_plugins(self) -> list[AgentPlugin]:
        from deerflow_nb.mcp import McpPlugin
        from deerflow_nb.memory.plugin import MemoryPlugin
        from deerflow_nb.skills.plugin import SkillsPlugin
        from deerflow_nb.usage import UsagePlugin

        return [McpPlugin(self.mcp), self.subagents, UsagePlugin(self.usage), MemoryPlugin(self.memory),
                SkillsPlugin(self.skill_manager(), self.skill_manager)]

    def _resolve_subagent_model(self, spec: SubagentSpec, parent: RunContext) -> tuple[BaseChatModel, str]:
        from deerflow_nb.subagents.plugin import model_label

        options = RunOptions(model_name=spec.model or parent.model_name, thinking_enabled=parent.thinking_enabled)
        model, name, _ = self.resolve_model(options)
        return model, name or model_label(model)

    def _subagent_tools(self, config: AppConfig) -> list[BaseTool]:
        # Built-ins, configured tools and MCP tools; never plug-in tools such as a memory
        # tool, so a subagent cannot write to the user's memory.
        from deerflow_nb.tools import get_available_tools

        return [*get_available_tools(config, include_clarification=False), *self.mcp.load_tools()]

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> Runtime:
        """Open persistence now (recovering runs orphaned by a dead process); returns ``self``."""
        self.loop.run(self.store(), method="Runtime.start")
        return self

    def close(self) -> None:
        """Cancel active runs, close the database, stop :attr:`loop`."""
        self.loop.stop(self.aclose)

    # -- resources -----------------------------------------------------------------
    @property
    def config(self) -> AppConfig:
        """The current config (re-read when the file changes; read once per run inside a run)."""
        pinned = _RUN_CONFIG.get()
        if pinned is not None and pinned.live and pinned.engine is self:
            return pinned.config
        return get_app_config(self.config_path) if self.config_path else get_app_config()

    @property
    def sandbox_provider(self) -> SandboxProvider:
        """The sandbox provider (startup-only: created from the first config)."""
        if self._sandbox_provider is None:
            from deerflow_nb.sandbox import create_sandbox_provider

            self._sandbox_provider = create_sandbox_provider(self._startup, self.paths)
        return self._sandbox_provider

    @property
    def store_open(self) -> bool:
        """Whether persistence is open already (:meth:`store` then returns without waiting)."""
        return self._store is not None

    async def store(self) -> Store:
        """Open persistence once, on this loop, and recover runs orphaned by a dead process."""
        if self._store_lock is None:
            self._store_lock = asyncio.Lock()
        async with self._store_lock:
            if self._store is None:
                store = await open_store(self.database)
                self.runs.attach(store.runs, store.threads)
                self.recovered_runs = await self.runs.recover_orphans()
                await self._mark_recovered(self.recovered_runs, store)
                self.runs.start_maintenance()  # renew leases, recover expired ones while this process lives
                self._store = store
                self.runs.schedule_dispatch()  # queued runs that waited for a restart (after the lock)
            return self._store

    async def _mark_recovered(self, run_ids: list[str], store: Store | None = None) -> None:
        """End the threads of recovered runs with a marked, interrupted answer (what had streamed)."""
        store = store or self._store
        if store is None or not run_ids:
            return
        graph = marker_graph(store.checkpointer)
        for run_id in run_ids:
            try:  # what the dead process had streamed (the journal's ai_partial entries)
                partial = await store.events.partial_texts(run_id)
            except Exception as exc:  # recovery goes on without the text
                logger.warning("could not read the partial answer of run %s: %s", run_id, exc)
                partial = {}
            # logs its own failure: the run is recovered, its thread just lacks the marker
            await mark_interrupted(graph, self.runs.recovered[run_id], run_id,
                                   reason="orphan_recovered", partial_texts=partial)
            thread_id = self.runs.recovered[run_id]
            self.runs.notify_thread_free(thread_id)  # its queue may go on
            title = await write_fallback_title(graph, thread_id, self.config.title)
            if title:  # the thread row shows it too
                try:
                    await store.threads.update(thread_id, title=title)
                except Exception as exc:
                    logger.warning("could not store the fallback title of thread %s: %s", thread_id, exc)

    async def aclose(self) -> None:
        """Cancel active runs, close the database and release sandboxes."""
        schedules = self.__dict__.get("schedules")
        if schedules is not None:  # no new dispatch while the runs shut down
            await schedules.stop()
        await self.runs.shutdown()
        if schedules is not None:
            await schedules.aclose()
        self.bridge.close()
        if self._store is not None:
            await self._store.aclose()
            self._store = None
        for plugin in self.plugins:
            try:
                await plugin.aclose()
            except Exception as exc:  # closing must go on for the others
                logger.warning("plugin %s failed to close: %s", type(plugin).__name__, exc)
        if self._sandbox_provider is not None:
            await asyncio.to_thread(self._sandbox_provider.shutdown)

    # -- models and graphs ---------------------------------------------------------
    def resolve_model(self, options: RunOptions) -> tuple[BaseChatModel, str | None, bool]:
        """(model instance, configured name or None, supports_vision)."""
        from deerflow_nb.models import create_chat_model

        config = self.config
        name = options.model_name or (self.model if isinstance(self.model, str) else None)
        if isinstance(self.model, BaseChatModel) and options.model_name is None:
            return self.model, None, False
        model = create_chat_model(name, thinking_enabled=options.thinking_enabled, config=config)
        entry = config.get_model_config(name) if name else (config.models[0] if config.models else None)
        return model, (entry.name if entry else name), bool(entry and entry.supports_vision)

    async def graph_for(self, options: RunOptions,
                        resolved: tuple[BaseChatModel, str | None, bool] | None = None) -> tuple[Any, str | None]:
        """The compiled lead agent for these options (cached while the config and plug-ins are unchanged).

        The plug-ins' cache keys are computed here, on the loop: the skills plug-in stats its
        folders (a few cheap ``stat`` calls), which costs less than a worker-thread hop.
        """
        store = await self.store()
        config = self.config
        model, name, vision = resolved or self.resolve_model(options)
        plugin_keys = self._plugin_keys()
        profile = self.profile_for(model, name)
        key = (self._config_key(config), name, id(model) if name is None else None, options.thinking_enabled,
               options.plan_mode, options.subagent_enabled, vision, plugin_keys, bool(options.non_interactive),
               profile)
        graph = self._graphs.get(key)
        if graph is None:
            agent_options = AgentOptions(model_name=name, thinking_enabled=options.thinking_enabled,
                                         plan_mode=options.plan_mode, subagent_enabled=options.subagent_enabled,
                                         supports_vision=vision, non_interactive=bool(options.non_interactive),
                                         profile=profile)
            graph = await asyncio.to_thread(self._build_graph, model, config, agent_options, store)
            if len(self._graphs) > 16:
                self._graphs.clear()
            self._graphs[key] = graph
        return graph, name

    def profile_for(self, model: BaseChatModel, name: str | None) -> str:
        """The agent profile of this model: its ``models[].profile``, else the model's own preference."""
        from deerflow_nb.agent.profile import model_profile

        entry = self.config.get_model_config(name) if name else None
        return model_profile(model, entry.profile if entry is not None else None)

    def _plugin_keys(self) -> tuple[Any, ...]:
        """Every plug-in's graph-cache key."""
        return tuple(plugin.cache_key() for plugin in self.plugins)

    def _config_key(self, config: AppConfig) -> str:
        # by content, not identity: another caller of get_app_config() with a different path
        # evicts the loader's single cache slot, and an equal re-parsed config must not
        # rebuild the graph (or restart a scripted model) on every run
        if config is not self._last_config:
            self._last_config = config
            self._last_config_key = hashlib.sha1(config.model_dump_json().encode()).hexdigest()
        return self._last_config_key

    def _build_graph(self, model: BaseChatModel, config: AppConfig, options: AgentOptions, store: Store) -> Any:
        from deerflow_nb.tools import get_available_tools

        slots: dict[str, list[Any]] = {}
        small = options.profile == "small"
        if small:  # compact prompt and tools: plug-ins add middlewares and context, not tools or prompt text
            from deerflow_nb.agent.profile import small_profile_tools

            tools = small_profile_tools(config)
        else:
            tools = list(get_available_tools(config, supports_vision=options.supports_vision))
        sections: list[str] = []
        providers: list[Any] = []
        for plugin in self.plugins:
            for slot, members in plugin.middlewares(config, options).items():
                slots.setdefault(slot, []).extend(members)
            if not small:
                tools += plugin.tools(config, options)
                sections += plugin.prompt_sections(config, options)
            providers += plugin.context_providers(config, options)
        return make_lead_agent(model, config=config, options=options, tools=tools, checkpointer=store.checkpointer,
                               slots=slots, prompt_sections=sections, context_providers=providers)

    def invalidate(self) -> None:
        """Forget compiled graphs (after a skill, MCP or memory-mode change)."""
        self._graphs.clear()

    # -- runs ----------------------------------------------------------------------
    def new_input(self, text: str | HumanMessage, run_id: str) -> HumanMessage:
        """The human message that starts a run, tagged with ``run_id``."""
        if isinstance(text, HumanMessage):
            message = text
            try:  # a HumanMessage holds whatever content it was given: checked as the HTTP input is
                check_content(message.content, "message.content")
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        elif isinstance(text, str):
            if not text.strip():
                raise UsageError("message must not be empty")
            message = HumanMessage(content=text)
        else:
            raise UsageError(f"message must be a string or a HumanMessage, got {type(text).__name__}")
        kwargs = {**message.additional_kwargs, "run_id": run_id}
        return message.model_copy(update={"id": message.id or str(uuid.uuid4()), "additional_kwargs": kwargs})

    async def start_run(self, thread_id: str, message: str | HumanMessage, options: RunOptions,
                        secrets: dict[str, str] | None = None, *, stream_tokens: bool = True,
                        stream_updates: bool = False, stream_subgraphs: bool = False, user_id: str | None = None,
                        multitask_strategy: str = "reject", metadata: dict[str, Any] | None = None,
                        assistant_id: str = "lead_agent", checkpoint_id: str | None = None,
                        admitted_run_id: str | None = None) -> RunRecord:
        """Admit and start a background run on ``thread_id``; returns at once.

        ``multitask_strategy="enqueue"`` on a busy thread stores the run in the thread's queue
        (:meth:`RunManager.enqueue`; secrets are never stored, so such a run takes none); the
        queue starts it when the thread is free (``admitted_run_id``: that start).

        ``stream_updates`` adds ``updates`` events (LangGraph's ``updates`` mode) to the run's stream;
        ``stream_subgraphs`` adds its subagents' frames, namespaced ``tools:<task_id>`` (see
        :attr:`~deerflow_nb.runtime.events.StreamEvent.namespace`).
        ``checkpoint_id`` runs from that checkpoint of the thread instead of its newest: the run's
        checkpoints become a new branch (LangGraph's ``configurable.checkpoint_id``) and the thread's
        head; an unknown checkpoint is :class:`~deerflow_nb.errors.NotFoundError`, refused before admission.
        """
        user_id = user_id or self.user_id
        queue = {"stream_tokens": stream_tokens, "stream_updates": stream_updates,
                 "stream_subgraphs": stream_subgraphs, "checkpoint_id": checkpoint_id}
        if multitask_strategy == "enqueue" and admitted_run_id is None:
            if secrets:
                raise UsageError("secrets: a queued run is stored in the database and secrets never are; "
                                 "wait for the thread instead of multitask_strategy='enqueue'")
            if await self._busy(thread_id, user_id):
                return await self._enqueue(thread_id, message, options, user_id, metadata, assistant_id, queue)
        run_config = _RunConfig(self, self.config)
        token = _RUN_CONFIG.set(run_config)  # the run's task inherits it (tasks copy the context)
        try:
            return await self._start_run(thread_id, message, options, secrets, run_config,
                                         stream_tokens=stream_tokens, stream_updates=stream_updates,
                                         stream_subgraphs=stream_subgraphs, user_id=user_id,
                                         multitask_strategy=multitask_strategy, metadata=metadata,
                                         assistant_id=assistant_id, checkpoint_id=checkpoint_id,
                                         admitted_run_id=admitted_run_id)
        except ThreadBusyError:
            run_config.live = False
            if multitask_strategy != "enqueue" or admitted_run_id is not None:
                raise
            # the thread became busy between the check and the admission: queue the run after all
            return await self._enqueue(thread_id, message, options, user_id, metadata, assistant_id, queue)
        except BaseException:
            run_config.live = False
            raise
        finally:
            _RUN_CONFIG.reset(token)

    async def _start_run(self, thread_id: str, message: str | HumanMessage, options: RunOptions,
                         secrets: dict[str, str] | None, run_config: _RunConfig, *, stream_tokens: bool,
                         stream_updates: bool, stream_subgraphs: bool, user_id: str, multitask_strategy: str,
                         metadata: dict[str, Any] | None,
                         assistant_id: str, checkpoint_id: str | None, admitted_run_id: str | None = None) -> RunRecord:
        from deerflow_nb.tracing import TRACE_ID_KEY, RunTrace, enabled_providers

        providers = enabled_providers()  # a tracer switched on without its keys: refused before storing
        store = await self.store()
        carried: dict[str, Any] = {}
        if checkpoint_id is not None:  # the thread and the checkpoint must exist: a refusal creates nothing
            await self._checkpoint_tuple(store, thread_id, user_id, checkpoint_id)
            if replay_metadata(metadata):  # a regenerate / edit keeps the newest title (a later rename stays)
                title = (await store.get_thread(thread_id, user_id)).title
                carried = {"title": title} if title and title.strip() else {}
        await store.ensure_thread(thread_id, user_id)
        run_id = admitted_run_id or str(uuid.uuid4())
        input_message = self.new_input(message, run_id)
        graph_input: dict[str, Any] = {"messages": [input_message], **carried}
        # an edit rerun that fails, times out or is cancelled gives the thread back the conversation it replaced
        edit_replay = (replay_metadata(metadata) or {}).get("replay_kind") == "edit"
        resolved = self.resolve_model(options)
        model_name = resolved[1]
        context = RunContext(
            thread_id=thread_id, user_id=user_id, run_id=run_id, app_config=run_config.config, paths=self.paths,
            sandbox_provider=self.sandbox_provider, model_name=model_name,
            thinking_enabled=options.thinking_enabled, plan_mode=options.plan_mode,
            subagent_enabled=options.subagent_enabled, secrets=dict(secrets or {}),
            profile=self.profile_for(resolved[0], model_name),
        )
        if options.max_concurrent_subagents is not None:  # read by SubagentLimitMiddleware
            context.extra["max_concurrent_subagents"] = options.max_concurrent_subagents
        if stream_subgraphs:  # read by the subagent executor: its frames join the run's stream
            context.extra[STREAM_SUBGRAPHS_KEY] = True
        if (replay_metadata(metadata) or {}).get("replay_kind") == "regenerate":  # a different answer, please
            context.extra[SAMPLING_SEED_KEY] = uuid.UUID(run_id).int % 2**31
        trace = RunTrace(thread_id=thread_id, user_id=user_id, run_id=run_id, assistant_id=assistant_id,
                         model_name=model_name, providers=providers)
        context.extra[TRACE_ID_KEY] = trace.trace_id
        configurable: dict[str, Any] = {
            "thread_id": thread_id, "run_id": run_id, "model_name": model_name,
            "thinking_enabled": options.thinking_enabled, "is_plan_mode": options.plan_mode,
            "subagent_enabled": options.subagent_enabled, "non_interactive": bool(options.non_interactive)}
        if checkpoint_id is not None:  # LangGraph forks there: the run's checkpoints are a new branch
            configurable.update(checkpoint_ns="", checkpoint_id=checkpoint_id)
        config: dict[str, Any] = {"configurable": configurable, "recursion_limit": options.recursion_limit}
        replay = replay_metadata(metadata)
        if replay:  # a regenerate / edit rerun: its checkpoints say so (thread.branches() reads it)
            config["metadata"] = replay
        rollback_point: list[dict[str, Any] | None] = []

        # a thread created (with a generated id) since its last run has no checkpoint to return to
        fresh = store.threads.take_fresh(thread_id)
        mark_new = getattr(store.checkpointer, "mark_new_thread", None)
        if fresh and mark_new is not None:
            mark_new(thread_id)  # the graph's first read of the thread needs no database trip
        # Folders, workspace snapshot, uploads scan and the plug-ins' blocking preparation: one
        # worker-thread hop, started now so it overlaps finding the graph and the admission
        # transaction. Not while this thread has a run here (a multitask interrupt must let it
        # stop before the snapshot).
        early: asyncio.Future[tuple[Path, dict[str, Any], str]] | None = None
        if self.runs.active_run(thread_id) is None:
            early = asyncio.ensure_future(asyncio.to_thread(self._prepare_folders, context))
            early.add_done_callback(_retrieve)
        try:
            graph, _ = await self.graph_for(options, resolved)
        except BaseException:
            if early is not None:
                early.cancel()
            raise

        def evaluator() -> BaseChatModel:  # goal mode's judge: the run's model, thinking off
            return self.resolve_model(replace(options, thinking_enabled=False))[0]

        async def body(record: RunRecord) -> AsyncIterator[StreamEvent]:
            # the preparation hop and the rollback point in parallel
            folders = early or asyncio.ensure_future(asyncio.to_thread(self._prepare_folders, context))
            try:
                rollback_point.append(None if fresh else await capture_rollback_point(store.checkpointer, thread_id))
            except BaseException:
                folders.cancel()
                raise
            status, error = "error", None
            trace.start()  # the OpenTelemetry run span; the tracers' callbacks hang below it
            traced = trace.graph_config(config)
            try:
                user_data, before, sandbox_id = await folders
                # the middlewares find both ready and skip their own worker-thread hops
                context.extra["thread_dirs_ready"] = True
                context.extra["sandbox_id"] = sandbox_id
                async for event in agent_run(graph, graph_input, context=context, config=traced,
                                             input_message=input_message, events=store.events, user_data=user_data,
                                             stream_tokens=stream_tokens, stream_updates=stream_updates,
                                             workspace_before=before,
                                             journal_sink=record.defer_journal,
                                             finish_blocking=lambda outcome: self._finish_blocking(context, outcome),
                                             continuation=GoalLoop(graph, context, evaluator)):
                    if event.type == "values":
                        record.title = event.data.get("title") or record.title
                    elif event.type == "error":
                        error = event.data.get("message")
                    elif event.type == "end":
                        status = "success" if event.data.get("status", "success") == "success" else "error"
                        if status != "success" and edit_replay:
                            await self._undo_edit(graph, store, record, rollback_point)
                    yield event
            except asyncio.CancelledError:
                status = "interrupted"
                if edit_replay and not record.rollback_requested:
                    await asyncio.shield(self._undo_edit(graph, store, record, rollback_point))
                elif not record.rollback_requested:  # keep the partial answer, marked interrupted
                    await asyncio.shield(self._mark_cancelled(graph, store, record, checkpoint_id,
                                                              rollback_point[0] if rollback_point else None))
                    # a first run cut short before its title was generated: a local one
                    record.title = await asyncio.shield(write_fallback_title(
                        graph, thread_id, run_config.config.title, input_message)) or record.title
                raise
            finally:
                trace.finish(status, error)
                if not context.extra.get(_FINISHED_BLOCKING):  # the run failed before its graph ran
                    await asyncio.to_thread(self._finish_blocking, context, status)
                for plugin in self.plugins:
                    try:
                        await plugin.finish_run(context, status)
                    except Exception as exc:
                        logger.warning("plugin %s failed after run %s: %s", type(plugin).__name__, run_id, exc)
                run_config.live = False

        async def rollback(record: RunRecord) -> None:
            if rollback_point:
                await restore_rollback_point(graph, store.checkpointer, thread_id, rollback_point[0])

        async def abandon(record: RunRecord) -> None:  # cancelled while pending: pair the preparation
            if early is not None:
                early.cancel()
            try:
                await asyncio.to_thread(self._finish_blocking, context, record.status
                                        if record.status in {"error", "timeout"} else "interrupted")
                for plugin in self.plugins:
                    try:
                        await plugin.finish_run(context, "interrupted")
                    except Exception as exc:
                        logger.warning("plugin %s failed after run %s: %s", type(plugin).__name__, run_id, exc)
            finally:
                run_config.live = False

        for plugin in self.plugins:  # before admission, so a plug-in's refusal reaches the caller
            await plugin.prepare_run(context)
        try:
            return await self.runs.create(
                thread_id=thread_id, user_id=user_id, body=body, run_id=run_id, assistant_id=assistant_id,
                multitask_strategy=multitask_strategy, metadata=metadata, on_rollback=rollback,
                timeout=options.timeout, admitted=admitted_run_id is not None, on_abandon=abandon,
                kwargs={"model_name": model_name, "plan_mode": options.plan_mode,
                        "thinking_enabled": options.thinking_enabled, "subagent_enabled": options.subagent_enabled})
        except BaseException:
            if early is not None:
                early.cancel()
            for plugin in self.plugins:
                with contextlib.suppress(Exception):
                    await plugin.finish_run(context, "error")
            raise

    async def _busy(self, thread_id: str, user_id: str) -> bool:
        """Whether the thread has an active run (here, or stored by any process) or a queue."""
        if self.runs.active_run(thread_id) is not None:
            return True
        store = await self.store()
        runs = await store.runs.list_by_thread(thread_id, user_id, limit=1, status="pending")
        return bool(runs or await store.runs.list_by_thread(thread_id, user_id, limit=1, status="running"))

    async def _enqueue(self, thread_id: str, message: str | HumanMessage, options: RunOptions, user_id: str,
                       metadata: dict[str, Any] | None, assistant_id: str, queue: dict[str, Any]) -> RunRecord:
        """Store the run in the thread's queue, with what starting it later needs (never secrets)."""
        from langchain_core.messages import message_to_dict

        store = await self.store()
        await store.get_thread(thread_id, user_id)  # the busy thread is the caller's
        if queue["checkpoint_id"] is not None:
            await self._checkpoint_tuple(store, thread_id, user_id, queue["checkpoint_id"])
        self.resolve_model(options)  # an unknown model is refused now, not when the run's turn comes
        run_id = str(uuid.uuid4())
        payload = {**queue, "input": message_to_dict(self.new_input(message, run_id)),
                   "options": asdict(options)}
        return await self.runs.enqueue(thread_id=thread_id, user_id=user_id, run_id=run_id,
                                       assistant_id=assistant_id, metadata=metadata, kwargs={"queued": payload})

    async def _dispatch_thread(self, thread_id: str) -> None:
        """Start the thread's next queued run, if it is free (a run that cannot start is stored ``error``)."""
        from langchain_core.messages import messages_from_dict

        while True:
            info = await self.runs.promote(thread_id)
            if info is None:
                return
            try:
                queued = info.kwargs["queued"]
                message = messages_from_dict([queued["input"]])[0]
                if not isinstance(message, HumanMessage):
                    raise UsageError("a queued run's input is not a human message")
                await self.start_run(
                    thread_id, message, RunOptions(**queued["options"]), None,
                    stream_tokens=bool(queued["stream_tokens"]), stream_updates=bool(queued["stream_updates"]),
                    stream_subgraphs=bool(queued["stream_subgraphs"]), user_id=info.user_id,
                    multitask_strategy="enqueue", metadata=info.metadata, assistant_id=info.assistant_id,
                    checkpoint_id=queued.get("checkpoint_id"), admitted_run_id=info.run_id)
                return  # it runs; its end starts the next one
            except Exception as exc:
                logger.warning("queued run %s could not start: %s", info.run_id, exc)
                await self.runs.fail_admitted(info, exc)

    async def _mark_cancelled(self, graph: Any, store: Store, record: RunRecord, checkpoint_id: str | None,
                              head_before: dict[str, Any] | None) -> None:
        """Mark a cancelled run's answer interrupted, on its own branch.

        A run from a checkpoint that was cut short before writing a checkpoint of its own gets
        its marker on that checkpoint (a new branch), not on the head it never touched.
        """
        branch = None
        if checkpoint_id is not None:
            head = await capture_rollback_point(store.checkpointer, record.thread_id)
            same = (head or {}).get("configurable", {}).get("checkpoint_id") == \
                (head_before or {}).get("configurable", {}).get("checkpoint_id")
            branch = checkpoint_id if same else None
        await mark_interrupted(graph, record.thread_id, record.run_id, reason="cancelled",
                               partial_texts=record.streamed_texts, checkpoint_id=branch)

    async def _undo_edit(self, graph: Any, store: Store, record: RunRecord,
                         rollback_point: list[dict[str, Any] | None]) -> None:
        """An edit rerun that did not succeed: the head it started from becomes the thread's head again.

        As the reference does for ``replay_kind: "edit"`` runs: the edited branch stays in the
        checkpoints (``thread.branches()``) but the thread shows the conversation it replaced.
        """
        if not rollback_point or rollback_point[0] is None:
            return
        try:
            await restore_rollback_point(graph, store.checkpointer, record.thread_id, rollback_point[0])
            flush = getattr(store.checkpointer, "aflush", None)
            if flush is not None:
                await flush()
        except Exception as exc:  # the outcome is already decided
            logger.warning("could not restore thread %s after edit run %s: %s", record.thread_id, record.run_id, exc)

    def _finish_blocking(self, context: RunContext, status: str) -> None:
        """(Blocking) every plug-in's :meth:`~AgentPlugin.finish_run_blocking`, once per run."""
        context.extra[_FINISHED_BLOCKING] = True
        for plugin in self.plugins:
            try:
                plugin.finish_run_blocking(context, status)
            except Exception as exc:
                logger.warning("plugin %s failed after run %s: %s", type(plugin).__name__, context.run_id, exc)

    def _prepare_folders(self, context: RunContext) -> tuple[Path, dict[str, Any], str]:
        """(Blocking) a run's setup off the loop, in one go.

        The thread's folders, the workspace snapshot before the run, its sandbox id, the
        uploads listing (``context.extra["uploads_scan"]``, read by the Uploads middleware)
        and every plug-in's :meth:`~AgentPlugin.prepare_run_blocking`.
        """
        from deerflow_nb.agent.middlewares.uploads import list_upload_entries

        user_id, thread_id = context.user_id, context.thread_id
        assert thread_id is not None
        user_data = self.paths.ensure_thread_dirs(user_id, thread_id)
        before = snapshot(user_data)
        context.extra["uploads_scan"] = list_upload_entries(str(user_data / "uploads"))
        for plugin in self.plugins:
            try:
                plugin.prepare_run_blocking(context)
            except Exception as exc:  # preparation is best effort; the run reports real failures
                logger.warning("plugin %s could not prepare run %s: %s", type(plugin).__name__, context.run_id, exc)
        return user_data, before, self.sandbox_provider.acquire(thread_id, user_id=user_id).id

    # -- state ---------------------------------------------------------------------
    async def get_state(self, thread_id: str, user_id: str | None = None, *,
                        checkpoint_id: str | None = None) -> dict[str, Any]:
        """The thread's current state values (empty for a thread that never ran), or at ``checkpoint_id``."""
        store = await self.store()
        if checkpoint_id is not None:
            item = await self._checkpoint_tuple(store, thread_id, user_id or self.user_id, checkpoint_id)
            return state_values(await materialized_values(store.checkpointer, item))
        await store.get_thread(thread_id, user_id or self.user_id)
        snapshot = await store.checkpointer.aget_tuple({"configurable": {"thread_id": thread_id}})
        if snapshot is None:
            return {}
        return state_values(await materialized_values(store.checkpointer, snapshot))

    async def _checkpoint_tuple(self, store: Store, thread_id: str, user_id: str, checkpoint_id: str) -> Any:
        """The saved checkpoint ``checkpoint_id`` of the user's thread, or :class:`NotFoundError`."""
        await store.get_thread(thread_id, user_id)
        if not isinstance(checkpoint_id, str) or not checkpoint_id:
            raise UsageError("checkpoint_id must be a non-empty string")
        item = await store.checkpointer.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": "",
                                                                     "checkpoint_id": checkpoint_id}})
        if item is None:
            raise NotFoundError(f"checkpoint {checkpoint_id!r} of thread {thread_id!r} not found")
        return item

    async def get_checkpoint(self, thread_id: str, checkpoint_id: str | None = None,
                             user_id: str | None = None) -> dict[str, Any] | None:
        """One checkpoint as a :meth:`get_history` item (default: the newest; ``None`` when the thread has none)."""
        store = await self.store()
        if checkpoint_id is not None:
            item = await self._checkpoint_tuple(store, thread_id, user_id or self.user_id, checkpoint_id)
            values = await materialized_values(store.checkpointer, item)
            return {**_history_item(item), "values": state_values(values)}
        await store.get_thread(thread_id, user_id or self.user_id)
        item = await store.checkpointer.aget_tuple({"configurable": {"thread_id": thread_id}})
        if item is None:
            return None
        values = await materialized_values(store.checkpointer, item)
        return {**_history_item(item), "values": state_values(values)}

    async def update_state(self, thread_id: str, values: dict[str, Any] | None, *, as_node: str | None = None,
                           checkpoint_id: str | None = None, user_id: str | None = None) -> dict[str, Any]:
        """Write ``values`` as a new checkpoint (LangGraph's ``update_state``); its config.

        Applied on the thread's newest checkpoint, or on ``checkpoint_id`` (the new checkpoint
        then starts a branch and becomes the head), through the channels' reducers as the
        ``model`` node's output (``messages`` append, or replace a message with the same id).
        ``values`` are validated first (:func:`~deerflow_nb.runtime.state_update.validate_state_update`);
        ``None`` copies the checkpoint as it is. Refused with :class:`ThreadBusyError` while a run
        is going. Returns ``{"thread_id", "checkpoint_ns", "checkpoint_id"}``.
        """
        from deerflow_nb.runtime.state_update import validate_state_update

        user_id = user_id or self.user_id
        if as_node not in {None, "model"}:
            raise UsageError(f"as_node: DeerFlow writes state updates as the 'model' node; got {as_node!r}")
        checked = validate_state_update(values)
        store = await self.store()
        config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        if checkpoint_id is not None:
            await self._checkpoint_tuple(store, thread_id, user_id, checkpoint_id)
            config["configurable"]["checkpoint_id"] = checkpoint_id
        else:
            await store.get_thread(thread_id, user_id)
        if self.runs.active_run(thread_id) is not None:
            raise ThreadBusyError(f"thread {thread_id!r} has a run in progress; update its state when the run ends")
        await ensure_thread_compatible(store.checkpointer, thread_id)
        store.threads.take_fresh(thread_id)  # it gets a checkpoint now: its first run must read it
        try:
            written = await marker_graph(store.checkpointer).aupdate_state(config, checked, as_node="model")
        except (ValueError, InvalidUpdateError) as exc:  # a reducer refused it (removing an unknown message id)
            where = "values.messages" if "messages" in (checked or {}) else "values"
            raise UsageError(f"{where}: {exc}") from None
        flush = getattr(store.checkpointer, "aflush", None)
        if flush is not None:
            await flush()
        title = (checked or {}).get("title")
        await store.touch(thread_id, title=title if isinstance(title, str) and title.strip() else None)
        configurable = written["configurable"]
        return {"thread_id": thread_id, "checkpoint_ns": configurable.get("checkpoint_ns", ""),
                "checkpoint_id": configurable["checkpoint_id"]}

    async def get_history(self, thread_id: str, limit: int | None, user_id: str | None = None,
                          before: str | None = None) -> list[dict[str, Any]]:
        """Checkpoints of the thread, newest first (``limit=0``: none, ``None``: all)."""
        store = await self.store()
        await store.get_thread(thread_id, user_id or self.user_id)
        if limit == 0:
            return []
        cursor: Any = {"configurable": {"thread_id": thread_id, "checkpoint_id": before}} if before else None
        # listed first: a saver's listing may hold its connection until it ends (PostgreSQL)
        items = [item async for item in store.checkpointer.alist({"configurable": {"thread_id": thread_id}},
                                                                 limit=limit, before=cursor)]
        out = []
        for item in items:
            values = await materialized_values(store.checkpointer, item)
            out.append({**_history_item(item), "values": state_values(values)})
        return out

    async def rename_thread(self, thread_id: str, title: str, user_id: str | None = None) -> None:
        """Set the thread's title, in its metadata row and in its state (so the next run keeps it).

        Refused with :class:`~deerflow_nb.errors.ThreadBusyError` while a run is going (the run
        would write its own state over the rename).
        """
        title = " ".join(str(title).split())
        if not title:
            raise UsageError("a thread title must not be empty")
        store = await self.store()
        await store.get_thread(thread_id, user_id or self.user_id)
        if self.runs.active_run(thread_id) is not None:
            raise ThreadBusyError(f"thread {thread_id!r} has a run in progress; rename it when the run ends")
        await ensure_thread_compatible(store.checkpointer, thread_id)
        store.threads.take_fresh(thread_id)  # it gets a checkpoint now: its first run must read it
        config: Any = {"configurable": {"thread_id": thread_id}}
        await marker_graph(store.checkpointer).aupdate_state(config, {"title": title}, as_node="model")
        flush = getattr(store.checkpointer, "aflush", None)
        if flush is not None:
            await flush()
        await store.touch(thread_id, title=title)

    async def compact_thread(self, thread_id: str, user_id: str | None = None, *,
                             keep_messages: int | None = None) -> dict[str, Any]:
        """Summarize the thread's older messages into ``summary_text`` and keep the recent ones.

        The summary comes from the summarization model (``summarization.model_name``, else the
        runtime's model), as automatic summarization would write it; the kept window is
        ``keep_messages`` (default ``summarization.keep_messages``), never splitting a tool
        result from its call. Refused with :class:`ThreadBusyError` while a run is going.
        Returns ``{"compacted", "removed", "kept", "summary_text", "checkpoint_id"}``
        (``compacted`` is false when there is nothing old enough to summarize).
        """
        from langchain_core.messages import RemoveMessage

        from deerflow_nb.agent.middlewares.summarization import split_for_summary, summarize
        from deerflow_nb.runtime.conversation import ThreadCompactRequest
        from deerflow_nb.runtime.gateway import validated

        user_id = user_id or self.user_id
        keep_messages = validated(ThreadCompactRequest, {"keep_messages": keep_messages}).keep_messages
        store = await self.store()
        await store.get_thread(thread_id, user_id)
        busy = ThreadBusyError(f"thread {thread_id!r} has a run in progress; compact it when the run ends")
        if self.runs.active_run(thread_id) is not None:
            raise busy
        values = await self.get_state(thread_id, user_id)
        messages = list(values.get("messages", []))
        previous = values.get("summary_text")
        config = self.config.summarization
        old, kept = split_for_summary(messages, keep_messages or config.keep_messages)
        if not old:
            return {"compacted": False, "removed": 0, "kept": len(messages), "summary_text": previous,
                    "checkpoint_id": None}
        if config.model_name:
            from deerflow_nb.models import create_chat_model

            model = create_chat_model(config.model_name, config=self.config)
        else:
            model = self.resolve_model(self.defaults)[0]
        text = await summarize(model, previous, old)
        if self.runs.active_run(thread_id) is not None:  # a run started while the model summarized
            raise busy
        update = {"summary_text": text, "messages": [RemoveMessage(id=m.id) for m in old if m.id]}
        written = await marker_graph(store.checkpointer).aupdate_state(
            {"configurable": {"thread_id": thread_id}}, update, as_node="model")
        flush = getattr(store.checkpointer, "aflush", None)
        if flush is not None:
            await flush()
        await store.touch(thread_id)
        return {"compacted": True, "removed": len(old), "kept": len(kept), "summary_text": text,
                "checkpoint_id": written["configurable"]["checkpoint_id"]}

    async def delete_run(self, run_id: str, user_id: str | None = None) -> None:
        """Delete a finished run and its journal (``NotFoundError`` for another user's or a missing run)."""
        info = await self.runs.get(run_id, user_id or self.user_id)
        if info is None:
            raise NotFoundError(f"run {run_id!r} not found")
        if info.status in {"pending", "running"}:
            raise ThreadBusyError(f"run {run_id!r} is still active; cancel it first")
        store = await self.store()
        await store.events.delete_run(run_id)
        await store.runs.delete(run_id)
        self.runs.forget(run_id)

    async def run_events(self, thread_id: str, run_id: str | None = None, *, user_id: str | None = None,
                         event_type: str | None = None) -> list[dict[str, Any]]:
        """Journal entries of a run (or of the whole thread), oldest first."""
        user_id = user_id or self.user_id
        store = await self.store()
        await store.get_thread(thread_id, user_id)
        if run_id is not None:
            info = await self.runs.get(run_id, user_id)
            if info is None or info.thread_id != thread_id:
                raise NotFoundError(f"run {run_id!r} not found")
        entries = await store.events.list(user_id, thread_id=thread_id, run_id=run_id, event_type=event_type)
        return [e.to_dict() for e in entries]

    async def workspace_changes(self, thread_id: str, run_id: str | None = None, *,
                                user_id: str | None = None) -> dict[str, Any] | None:
        """The ``workspace_changes`` payload of a run (default: the latest run that changed files)."""
        entries = await self.run_events(thread_id, run_id, user_id=user_id, event_type="workspace_changes")
        return entries[-1]["payload"] if entries else None
