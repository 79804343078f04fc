"""``agent.skills`` and the skills gateway-equivalent methods of ``DeerFlow``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from deerflow_nb.client.mixins import PluginHost

if TYPE_CHECKING:
    from deerflow_nb.skills.client import SkillsClient
    from deerflow_nb.skills.manager import SkillManager

__all__ = ["SkillsMixin"]


class SkillsMixin(PluginHost):
    """Skills surface of :class:`~deerflow_nb.DeerFlow`."""

    _engine: Any

    @property
    def _skill_manager(self) -> SkillManager:
        manager = self.__dict__.get("_skills_manager")
        if manager is None:
            from deerflow_nb.skills.manager import SkillManager

            engine = self._engine
            manager = SkillManager(engine.paths, engine.user_id, lambda: engine.config)
            self.__dict__["_skills_manager"] = manager
        return manager

    def _skill_manager_for(self, user_id: str) -> SkillManager:
        """Managers of other users (the server extension runs for many users through one client)."""
        from deerflow_nb.skills.manager import SkillManager

        managers: dict[str, SkillManager] = self.__dict__.setdefault("_skills_managers", {})
        if user_id not in managers:
            engine = self._engine
            managers[user_id] = SkillManager(engine.paths, user_id, lambda: engine.config)
        return managers[user_id]

    def _make_plugins(self) -> list[Any]:
        from deerflow_nb.skills.plugin import SkillsPlugin

        return [*super()._make_plugins(), SkillsPlugin(self._skill_manager, self._skill_manager_for)]

    @property
    def skills(self) -> SkillsClient:
        """The user's skills: ``list()``, ``get()``, ``enable()``, ``disable()``, ``install()``, ``uninstall()``."""
        from deerflow_nb.skills.client import SkillsClient

        return SkillsClient(self._skill_manager, self._engine.invalidate)

    # -- gateway-equivalent methods ---------------------------------------------------
    def list_skills(self) -> dict[str, Any]:
        """``{"skills": [...]}`` exactly as ``GET /skills`` returns it."""
        from deerflow_nb.skills.schemas import SkillsListResponse, skill_response

        root = self._skill_manager.container_root
        return SkillsListResponse(skills=[skill_response(s, root) for s in self._skill_manager.scan()]).model_dump()

    def get_skill(self, name: str) -> dict[str, Any]:
        """One skill as ``GET /skills/{name}`` returns it."""
        from deerflow_nb.skills.schemas import skill_response

        return skill_response(self._skill_manager.get(name), self._skill_manager.container_root).model_dump()

    def update_skill(self, name: str, enabled: bool) -> dict[str, Any]:
        """Enable or disable a skill, as ``PUT /skills/{name}`` does; returns the updated skill."""
        from deerflow_nb.skills.schemas import skill_response

        skill = self._skill_manager.set_enabled(name, enabled)
        self._engine.invalidate()
        return skill_response(skill, self._skill_manager.container_root).model_dump()

    def install_skill(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """Install a ``.skill`` archive from a local path, as ``POST /skills/install`` does.

        Raises:
            SkillInstallError: the archive was rejected (nothing was written).
        """
        from deerflow_nb.skills.schemas import SkillInstallResponse

        skill = self._skill_manager.install(path)
        self._engine.invalidate()
        return SkillInstallResponse(success=True, skill_name=skill.name,
                                    message=f"Skill {skill.name!r} installed").model_dump()
