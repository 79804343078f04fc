"""Discover skills under the public and custom roots.

A skill is a folder holding ``SKILL.md``. Folders are scanned recursively (so a
root may group skills in sub-folders), but a skill folder is a package boundary:
a ``SKILL.md`` nested inside a skill is part of that skill, never a skill of its own.
A skill whose front matter is malformed is skipped with a warning naming the file.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from deerflow_nb.skills.parser import SkillFormatError, parse_skill_file
from deerflow_nb.skills.types import SKILL_FILE, Category, Skill

__all__ = ["discover_skills", "load_skills"]

logger = logging.getLogger(__name__)
_SKIP_DIRS = frozenset({"__pycache__", "node_modules"})


def discover_skills(root: Path, category: Category, *, seen_dirs: list[Path] | None = None) -> list[Skill]:
    """Every valid skill below ``root`` (sorted by relative path); ``[]`` when ``root`` is missing.

    ``seen_dirs`` (optional) collects the folders walked that are not skills themselves (the root
    and grouping folders), so callers can watch them for new or removed skills.
    """
    if not root.is_dir():
        return []
    found: list[Skill] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        current = Path(dirpath)
        if SKILL_FILE in filenames and current != root:
            dirnames[:] = []  # a package boundary: nothing below is a separate skill
            try:
                found.append(parse_skill_file(current, category=category, root=root))
            except SkillFormatError as exc:
                logger.warning("skipping skill: %s", exc)
            continue
        if seen_dirs is not None:  # grouping folders only: a skill's own changes show in its SKILL.md
            seen_dirs.append(current)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
    return sorted(found, key=lambda s: s.relative_path)


def _dedupe(skills: Iterable[Skill], taken: set[str]) -> list[Skill]:
    kept = []
    for skill in skills:
        if skill.name in taken:
            logger.warning("skipping %s skill %r at %s: the name is already used by another skill",
                           skill.category, skill.name, skill.skill_file)
            continue
        taken.add(skill.name)
        kept.append(skill)
    return kept


def load_skills(public_root: Path | None, custom_root: Path | None,
                *, seen_dirs: list[Path] | None = None) -> list[Skill]:
    """Public skills, then the user's custom skills; a name is owned by its first (public) holder."""
    taken: set[str] = set()
    public = _dedupe(discover_skills(public_root, "public", seen_dirs=seen_dirs), taken) if public_root else []
    custom = _dedupe(discover_skills(custom_root, "custom", seen_dirs=seen_dirs), taken) if custom_root else []
    return public + custom
