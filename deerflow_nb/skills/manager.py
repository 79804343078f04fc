"""``SkillManager``: one user's skills (discovery, enabled state, install, uninstall).

Scans are memoised on a cheap signature (the ``mtime`` of every folder walked, every
``SKILL.md`` and both state files), so asking for the skills on every run costs a
few ``stat`` calls, while an edit on disk is still picked up on the next run.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deerflow_nb.config.paths import Paths, packaged_skills_root
from deerflow_nb.config.schema import AppConfig
from deerflow_nb.errors import NotFoundError, UsageError
from deerflow_nb.skills.installer import install_skill_archive
from deerflow_nb.skills.loader import load_skills
from deerflow_nb.skills.state import SkillStateStore
from deerflow_nb.skills.types import Skill

__all__ = ["SkillManager"]


@functools.cache
def _packaged_root() -> Path:
    # where the package lives does not change while it runs; resolving it costs several stats
    return packaged_skills_root()


def _entries(path: Path) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(path)))
    except OSError:
        return ()


def _mtime(path: Path | None) -> int:
    if path is None:
        return 0
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


class SkillManager:
    """Skills visible to ``user_id``: the public root plus the user's custom root."""

    def __init__(self, paths: Paths, user_id: str, config: Callable[[], AppConfig],
                 extensions_path: Path | None = None) -> None:
        self.paths = paths
        self.user_id = user_id
        self._config = config
        self.state = SkillStateStore(paths.user_dir(user_id) / "skills" / "state.json", extensions_path)
        self._lock = threading.Lock()
        self._cache: tuple[tuple[Any, ...], list[Skill]] | None = None
        self._watched: list[Path] = []
        self.generation = 0

    # -- roots ---------------------------------------------------------------------
    @property
    def public_root(self) -> Path:
        """``skills.path`` from the config, else the skills shipped with the package."""
        configured = self._config().skills.path
        return Path(configured).expanduser().resolve() if configured else _packaged_root()

    @property
    def custom_root(self) -> Path:
        """``{home}/users/{user}/skills/custom``."""
        return self.paths.custom_skills_dir(self.user_id)

    @property
    def container_root(self) -> str:
        """Where skills appear inside the sandbox (``skills.container_path``)."""
        return self._config().skills.container_path

    # -- scanning ------------------------------------------------------------------
    def signature(self) -> tuple[Any, ...]:
        """Changes whenever a scan could give a different answer.

        Only skills added, removed or edited (or their state) count. A missing root and an
        empty one look the same: the sandbox creates the custom root on a user's first run,
        and that alone must not rebuild the agent (it would also restart scripted models).
        """
        public, custom = self.public_root, self.custom_root
        files = [s.skill_file for s in (self._cache[1] if self._cache else [])]
        # Root listings rather than root mtimes: a coarse mtime clock can miss a folder added in
        # the same tick.
        return (
            self.generation, str(public), str(custom), _entries(public), _entries(custom),
            tuple(_mtime(p) for p in self._watched), tuple(_mtime(p) for p in files),
            _mtime(self.state.user_state_file), _mtime(self.state.operator_file()),
        )

    def scan(self) -> list[Skill]:
        """All skills with their enabled state (public first, then custom, each sorted)."""
        return self.scan_with_signature()[1]

    def scan_with_signature(self) -> tuple[tuple[Any, ...], list[Skill]]:
        """:meth:`scan` plus the :meth:`signature` it is valid for (one signature computed, not two)."""
        with self._lock:
            key = self.signature()
            if self._cache is not None and self._cache[0] == key:
                return key, list(self._cache[1])
            watched: list[Path] = []
            skills = load_skills(self.public_root, self.custom_root, seen_dirs=watched)
            states = self.state.effective()
            skills = [s.with_enabled(states.get(s.name, True)) for s in skills]
            self._watched = [p for p in watched if p not in (self.public_root, self.custom_root)]
            self._cache = (key, skills)
            self._cache = (self.signature(), skills)  # re-key with the folders just walked
            return self._cache[0], list(skills)

    def enabled(self) -> list[Skill]:
        """The enabled skills only."""
        return [s for s in self.scan() if s.enabled]

    def get(self, name: str) -> Skill:
        """One skill by name; :class:`NotFoundError` lists the known names."""
        skills = self.scan()
        for skill in skills:
            if skill.name == name:
                return skill
        known = ", ".join(s.name for s in skills) or "none"
        raise NotFoundError(f"skill {name!r} not found; known skills: {known}")

    # -- changes -------------------------------------------------------------------
    def _changed(self) -> None:
        with self._lock:
            self.generation += 1
            self._cache = None

    def set_enabled(self, name: str, enabled: bool) -> Skill:
        """Enable or disable ``name`` for this user (persisted in the user's state file)."""
        if not isinstance(enabled, bool):
            raise UsageError(f"enabled must be true or false, got {enabled!r}")
        self.get(name)
        self.state.set_enabled(name, enabled)
        self._changed()
        return self.get(name)

    def install(self, archive: str | os.PathLike[str]) -> Skill:
        """Install a ``.skill`` archive as a custom skill (see :func:`install_skill_archive`)."""
        public = {s.name for s in self.scan() if s.category == "public"}
        installed = install_skill_archive(archive, self.custom_root, reserved_names=public)
        self._changed()
        return self.get(installed.name)

    def uninstall(self, name: str) -> None:
        """Remove the custom skill ``name`` (public skills can only be disabled)."""
        skill = self.get(name)
        if skill.category != "custom":
            raise UsageError(f"skill {name!r} is a public skill; disable it instead of uninstalling")
        trash = skill.path.with_name(f".remove-{skill.path.name}-{os.getpid()}")
        os.rename(skill.path, trash)  # disappears at once; the delete may take longer
        shutil.rmtree(trash, ignore_errors=True)
        self.state.forget(name)
        self._changed()
