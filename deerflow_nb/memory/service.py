"""``MemoryService``: per-user stores, the update queue and the injection provider of one client."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from deerflow_nb.config.paths import Paths, validate_id
from deerflow_nb.config.schema import AppConfig, MemoryConfig
from deerflow_nb.memory.errors import MemoryStoreError
from deerflow_nb.memory.facts import Fact
from deerflow_nb.memory.injection import build_injection
from deerflow_nb.memory.queue import MemoryQueue, PendingUpdate
from deerflow_nb.memory.storage import DEFAULT_AGENT, MemoryStorage
from deerflow_nb.memory.updater import run_update

__all__ = ["MemoryService", "conversation_of"]

logger = logging.getLogger(__name__)
_MAX_TURNS = 20
_MAX_FROZEN = 512


def _text(message: AnyMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def conversation_of(messages: Sequence[AnyMessage], limit: int = _MAX_TURNS) -> list[tuple[str, str]]:
    """User messages and final answers (no tool traffic, no internal messages), the last ``limit``."""
    turns: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, HumanMessage) and not message.additional_kwargs.get("deerflow_internal"):
            role = "user"
        elif isinstance(message, AIMessage) and not message.tool_calls:
            role = "assistant"
        else:
            continue
        text = _text(message).strip()
        if text:
            turns.append((role, text))
    return turns[-limit:]


class MemoryService:
    """Everything memory needs at run time, shared by the plug-in and ``agent.memory``."""

    def __init__(self, paths: Paths, config: Callable[[], AppConfig],
                 resolve_model: Callable[[str | None], BaseChatModel],
                 read_state: Callable[[str, str], Awaitable[dict[str, Any]]]) -> None:
        self.paths = paths
        self._config = config
        self._resolve_model = resolve_model
        self._read_state = read_state
        self._storages: dict[tuple[str, str], MemoryStorage] = {}
        self._lock = threading.Lock()
        self._frozen: OrderedDict[tuple[str, str], str | None] = OrderedDict()
        self.queue = MemoryQueue(self.process, lambda: self.config.debounce_seconds)

    @property
    def config(self) -> MemoryConfig:
        """The current ``memory`` config section."""
        return self._config().memory

    def root(self) -> Path:
        """The folder holding ``users/{user}/memory.json`` (``memory.storage_path`` or the home)."""
        configured = self.config.storage_path
        return Path(configured).expanduser().resolve() if configured else self.paths.home

    def storage(self, user_id: str, agent: str = DEFAULT_AGENT) -> MemoryStorage:
        """The (cached) store of ``user_id``'s ``agent`` bucket."""
        key = (validate_id(user_id, "user_id"), agent)
        with self._lock:
            store = self._storages.get(key)
            user_dir = self.root() / "users" / user_id
            if store is None or store.user_dir != user_dir:
                store = MemoryStorage(user_dir, agent)
                self._storages[key] = store
            return store

    # -- updates -------------------------------------------------------------------
    async def queue_thread(self, user_id: str, thread_id: str, model_name: str | None,
                           messages: Sequence[AnyMessage] | None = None) -> bool:
        """Queue the thread's conversation for an update; ``False`` when there is nothing to learn.

        ``messages`` (the thread's messages as the run left them) saves reading the state back.
        """
        if messages is None:
            state = await self._read_state(thread_id, user_id)
            messages = list(state.get("messages", []))
        conversation = conversation_of(messages)
        if not any(role == "user" for role, _ in conversation):
            return False
        self.queue.add(PendingUpdate(user_id, thread_id, conversation, model_name))
        return True

    async def process(self, item: PendingUpdate) -> dict[str, Any]:
        """Ask the memory model for an update from one conversation and apply it."""
        config = self.config
        model = self._resolve_model(config.model_name or item.model_name)
        result = await run_update(self.storage(item.user_id), model, item.conversation, config,
                                  source=f"thread:{item.thread_id}")
        logger.info("memory updated from thread %s: %d fact(s) added", item.thread_id, len(result["added"]))
        return result

    # -- injection -----------------------------------------------------------------
    def ranked_facts(self, storage: MemoryStorage, query: str) -> list[Fact]:
        """Facts relevant to ``query`` first, then the most confident others; ``max_facts`` in all."""
        limit = self.config.max_facts
        relevant = storage.search(query, limit=limit) if query.strip() else []
        return relevant + storage.top_facts(limit - len(relevant), exclude={f.id for f in relevant})

    def injection_for(self, user_id: str, query: str) -> str | None:
        """The ``<memory>`` block for a conversation starting with ``query``."""
        storage = self.storage(user_id)
        return build_injection(storage.document(), self.ranked_facts(storage, query),
                               self.config.max_injection_tokens)

    def context_block(self, request: Any) -> str | None:
        """Context provider: the thread's memory block, computed once per thread then reused.

        Freezing it keeps the first human message (and so the provider's prompt cache)
        stable for the rest of the thread even when memory changes in between.
        """
        from deerflow_nb.agent.middlewares._base import context_of

        config = self.config
        if not (config.enabled and config.injection_enabled):
            return None
        context = context_of(request)
        key = (context.user_id, context.thread_id or "")
        if key in self._frozen:
            self._frozen.move_to_end(key)
            return self._frozen[key]
        first = next((m for m in request.state.get("messages", []) if isinstance(m, HumanMessage)), None)
        try:
            block = self.injection_for(context.user_id, _text(first) if first is not None else "")
        except MemoryStoreError as exc:  # a broken memory file must not break the run
            logger.warning("memory not injected: %s", exc)
            return None
        self._frozen[key] = block
        while len(self._frozen) > _MAX_FROZEN:
            self._frozen.popitem(last=False)
        return block

    def forget_frozen(self) -> None:
        """Recompute injection blocks (after clear/import: old content must not linger)."""
        self._frozen.clear()

    async def aclose(self) -> None:
        """Flush pending updates (bounded by ``shutdown_flush_timeout_seconds``) and close indexes."""
        await self.queue.aclose(self.config.shutdown_flush_timeout_seconds)
        with self._lock:
            for store in self._storages.values():
                store.index.close()
            self._storages.clear()
