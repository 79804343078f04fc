"""The skill record shared by discovery, install, prompting and activation."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

__all__ = ["SKILL_FILE", "Category", "SecretRequirement", "Skill", "strip_frontmatter"]

SKILL_FILE = "SKILL.md"
Category = Literal["public", "custom"]

_FRONTMATTER_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


def strip_frontmatter(text: str) -> str:
    """The Markdown body of a ``SKILL.md`` (everything after the front matter)."""
    match = _FRONTMATTER_RE.match(text)
    return text[match.end():] if match else text


@dataclass(frozen=True)
class SecretRequirement:
    """One ``required-secrets`` entry: the secret's name (also its env var) and whether it may be absent."""

    name: str
    optional: bool = False


@dataclass(frozen=True)
class Skill:
    """A discovered skill: metadata from ``SKILL.md`` plus where it lives and whether it is enabled.

    ``path`` is the skill folder on the host; ``relative_path`` is that folder relative to
    its category root, so the sandbox path is ``{container_root}/{category}/{relative_path}``.
    ``allowed_tools`` is ``None`` when the skill does not restrict tools.
    """

    name: str
    description: str
    category: Category
    path: Path
    relative_path: str
    license: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    required_secrets: tuple[SecretRequirement, ...] = ()
    version: str | None = None
    author: str | None = None
    compatibility: str | None = None
    enabled: bool = True
    extra: dict[str, object] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def skill_file(self) -> Path:
        """The host path of ``SKILL.md``."""
        return self.path / SKILL_FILE

    def container_path(self, root: str = "/mnt/skills") -> str:
        """The skill folder as the agent sees it inside the sandbox."""
        return f"{root.rstrip('/')}/{self.category}/{self.relative_path}"

    def container_file(self, root: str = "/mnt/skills") -> str:
        """``SKILL.md`` as the agent sees it inside the sandbox."""
        return f"{self.container_path(root)}/{SKILL_FILE}"

    def read_body(self) -> str:
        """The instructions: ``SKILL.md`` without its front matter (blocking file read)."""
        return strip_frontmatter(self.skill_file.read_text(encoding="utf-8")).strip()

    def with_enabled(self, enabled: bool) -> Skill:
        """A copy with ``enabled`` set."""
        return replace(self, enabled=enabled)

    def __repr__(self) -> str:
        state = "enabled" if self.enabled else "disabled"
        return f"<Skill {self.name!r} ({self.category}, {state})>"
