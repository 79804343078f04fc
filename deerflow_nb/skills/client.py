"""``agent.skills``: the notebook object for listing, toggling and installing skills."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from deerflow_nb.skills.activation import parse_slash
from deerflow_nb.skills.manager import SkillManager
from deerflow_nb.skills.types import Skill

__all__ = ["SkillList", "SkillsClient"]


class SkillList(list[Skill]):
    """A list of :class:`Skill` that renders as a table in notebooks."""

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per skill: name, description, category, enabled, path."""
        return [{"name": s.name, "description": s.description, "category": s.category, "enabled": s.enabled,
                 "path": str(s.path)} for s in self]

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` of :meth:`to_records` (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.to_records(), columns=["name", "description", "category", "enabled", "path"])

    def _repr_markdown_(self) -> str:
        rows = ["| name | category | enabled | description |", "|---|---|---|---|"]
        rows += [f"| {s.name} | {s.category} | {'yes' if s.enabled else 'no'} | {s.description[:80]} |"
                 for s in self]
        return "\n".join(rows)


class SkillsClient:
    """One user's skills. Changes take effect on the next run (the agent is rebuilt)."""

    def __init__(self, manager: SkillManager, on_change: Callable[[], None]) -> None:
        self._manager = manager
        self._on_change = on_change

    def __repr__(self) -> str:
        skills = self._manager.scan()
        return f"<Skills {sum(s.enabled for s in skills)}/{len(skills)} enabled, user={self._manager.user_id!r}>"

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.list())

    @property
    def public_root(self) -> os.PathLike[str]:
        """The public skills folder on the host."""
        return self._manager.public_root

    @property
    def custom_root(self) -> os.PathLike[str]:
        """The user's custom skills folder on the host."""
        return self._manager.custom_root

    def list(self, *, enabled_only: bool = False) -> SkillList:
        """Every skill (public first), or only the enabled ones."""
        skills = self._manager.enabled() if enabled_only else self._manager.scan()
        return SkillList(skills)

    def get(self, name: str) -> Skill:
        """One skill; :class:`~deerflow_nb.errors.NotFoundError` when unknown."""
        return self._manager.get(name)

    def enable(self, name: str) -> Skill:
        """Enable ``name`` for this user."""
        skill = self._manager.set_enabled(name, True)
        self._on_change()
        return skill

    def disable(self, name: str) -> Skill:
        """Disable ``name`` for this user."""
        skill = self._manager.set_enabled(name, False)
        self._on_change()
        return skill

    def install(self, path: str | os.PathLike[str]) -> Skill:
        """Install a ``.skill`` archive as a custom skill (all or nothing)."""
        skill = self._manager.install(path)
        self._on_change()
        return skill

    def uninstall(self, name: str) -> None:
        """Remove a custom skill."""
        self._manager.uninstall(name)
        self._on_change()

    def resolve(self, message: str) -> Skill | None:
        """The enabled skill ``message`` would activate (``/name task``), or ``None``."""
        command = parse_slash(message)
        if command is None:
            return None
        skill = next((s for s in self._manager.enabled() if s.name == command.name), None)
        return skill
