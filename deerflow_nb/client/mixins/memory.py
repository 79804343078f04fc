"""``agent.memory`` and the memory gateway-equivalent methods of ``DeerFlow``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deerflow_nb.client.mixins import PluginHost

if TYPE_CHECKING:
    from deerflow_nb.memory.client import MemoryClient
    from deerflow_nb.memory.service import MemoryService

__all__ = ["MemoryMixin"]


class MemoryMixin(PluginHost):
    """Memory surface of :class:`~deerflow_nb.DeerFlow`."""

    _engine: Any
    _loop: Any

    @property
    def _memory_service(self) -> MemoryService:
        service = self.__dict__.get("_memory_service_obj")
        if service is None:
            from deerflow_nb.client.engine import RunOptions
            from deerflow_nb.memory.service import MemoryService

            engine = self._engine

            def resolve_model(name: str | None) -> Any:
                return engine.resolve_model(RunOptions(model_name=name))[0]

            service = MemoryService(engine.paths, lambda: engine.config, resolve_model, engine.get_state)
            self.__dict__["_memory_service_obj"] = service
        return service

    def _make_plugins(self) -> list[Any]:
        from deerflow_nb.memory.plugin import MemoryPlugin

        return [*super()._make_plugins(), MemoryPlugin(self._memory_service)]

    @property
    def memory(self) -> MemoryClient:
        """The user's long-term memory: ``data``, ``facts``, ``search()``, ``add_fact()``, ``flush()``, ..."""
        from deerflow_nb.memory.client import MemoryClient

        return MemoryClient(self._memory_service, self._engine.user_id, self._loop)

    # -- gateway-equivalent methods ---------------------------------------------------
    def _memory_data(self) -> Any:
        from deerflow_nb.memory.schemas import memory_response

        storage = self._memory_service.storage(self._engine.user_id)
        return memory_response(storage.document(), storage.facts())

    def get_memory(self) -> dict[str, Any]:
        """The memory document as ``GET /memory`` returns it."""
        return dict(self._memory_data().model_dump())

    def reload_memory(self) -> dict[str, Any]:
        """Re-read memory from disk, as ``POST /memory/reload`` does; returns the document."""
        self._memory_service.storage(self._engine.user_id).load(force=True)
        self._memory_service.forget_frozen()
        return self.get_memory()

    def _memory_config(self) -> Any:
        from deerflow_nb.memory.schemas import memory_config_response

        service = self._memory_service
        return memory_config_response(service.config, str(service.root()))

    def get_memory_config(self) -> dict[str, Any]:
        """The memory settings as ``GET /memory/config`` returns them."""
        return dict(self._memory_config().model_dump())

    def get_memory_status(self) -> dict[str, Any]:
        """``{"config": ..., "data": ...}`` as ``GET /memory/status`` returns it."""
        from deerflow_nb.memory.schemas import MemoryStatusResponse

        return MemoryStatusResponse(config=self._memory_config(), data=self._memory_data()).model_dump()
