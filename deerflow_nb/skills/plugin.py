"""``SkillsPlugin``: skills' contribution to the lead agent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from deerflow_nb.agent.plugins import AgentPlugin
from deerflow_nb.skills.activation import SKILLS_RUN_KEY, SecretVault, SkillActivationMiddleware, SkillRunState
from deerflow_nb.skills.manager import SkillManager
from deerflow_nb.skills.prompt import build_describe_skill_tool, skills_prompt_section

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.tools import BaseTool

    from deerflow_nb.agent import AgentOptions
    from deerflow_nb.config import AppConfig
    from deerflow_nb.context import RunContext
    from deerflow_nb.skills.types import Skill

__all__ = ["SkillsPlugin"]


class SkillsPlugin(AgentPlugin):
    """Lists enabled skills in the prompt and applies slash activations.

    Every run starts with no secrets bound: :meth:`prepare_run` moves the caller's
    ``secrets`` into a vault from which an activated skill binds what it declares.
    """

    def __init__(self, manager: SkillManager, manager_for: Callable[[str], SkillManager] | None = None) -> None:
        self.manager = manager
        self._manager_for = manager_for
        # the scan :meth:`cache_key` just made, for the :meth:`prepare_run` of the same run start
        self._scanned: list[Skill] | None = None

    def manager_for(self, user_id: str) -> SkillManager:
        """The manager of ``user_id`` (the client's own manager when no factory was given).

        The system-prompt section lists the client user's skills; activation and secret
        binding always use the run's user.
        """
        if user_id == self.manager.user_id or self._manager_for is None:
            return self.manager
        return self._manager_for(user_id)

    def cache_key(self) -> Any:
        """Rebuild the graph when the skills, their state or the skills config change."""
        skills = self.manager._config().skills
        # The key must not change by itself after the first run: scan first (before the first scan
        # the signature lacks the skill files) and create the custom root (the first sandbox
        # creates it otherwise, which also changes the signature). A rebuilt graph restarts the model.
        self.manager.custom_root.mkdir(parents=True, exist_ok=True)
        signature, self._scanned = self.manager.scan_with_signature()
        return ("skills", signature, skills.deferred_discovery, skills.container_path)

    def middlewares(self, config: AppConfig, options: AgentOptions) -> dict[str, Sequence[AgentMiddleware]]:
        """The activation middleware, in the ``skills`` slot."""
        return {"skills": [SkillActivationMiddleware()]}

    def tools(self, config: AppConfig, options: AgentOptions) -> Sequence[BaseTool]:
        """``describe_skill`` when deferred discovery is on."""
        if not config.skills.deferred_discovery:
            return ()
        return [build_describe_skill_tool(self.manager.enabled, config.skills.container_path)]

    def prompt_sections(self, config: AppConfig, options: AgentOptions) -> Sequence[str]:
        """The ``<skill_system>`` section (static for a given set of skills)."""
        section = skills_prompt_section(self.manager.enabled(), config.skills.container_path,
                                        deferred=config.skills.deferred_discovery)
        return [section] if section else []

    async def prepare_run(self, context: RunContext) -> None:
        """Snapshot the skills for the run and lock its secrets away until a skill binds them."""
        manager = self.manager_for(context.user_id)
        skills, self._scanned = self._scanned, None
        if skills is None or manager is not self.manager:  # no scan from this run's start: scan now
            skills = await asyncio.to_thread(manager.scan)
        root = context.app_config.skills.container_path if context.app_config else "/mnt/skills"
        context.extra[SKILLS_RUN_KEY] = SkillRunState(skills={s.name: s for s in skills},
                                                      vault=SecretVault(context.secrets), container_root=root)
        context.secrets = {}
