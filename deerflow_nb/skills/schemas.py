"""Response models of the ``skills`` gateway routes and their SDK twins.

``DeerFlow.list_skills()`` / ``get_skill()`` / ``update_skill()`` / ``install_skill()``
and ``GET|PUT /deerflow/api/skills[/{name}]``, ``POST /deerflow/api/skills/install``
are built from these models, so both always return the same shape. Paths are the
sandbox paths (``/mnt/skills/...``); host paths never leave the process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from deerflow_nb.skills.types import Skill

__all__ = [
    "skill_from_response",
    "SkillInstallRequest",
    "SkillInstallResponse",
    "SkillResponse",
    "SkillUpdateRequest",
    "SkillsListResponse",
    "skill_response",
]


class SkillResponse(BaseModel):
    """One skill as users see it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    license: str | None = None
    category: Literal["public", "custom"]
    enabled: bool = True
    path: str = Field(description="The skill folder inside the sandbox, e.g. /mnt/skills/public/data-analysis.")
    allowed_tools: list[str] | None = Field(default=None, description="Tools allowed while it is slash-activated.")
    required_secrets: list[str] = Field(default_factory=list, description="Names of the secrets it may use.")
    version: str | None = None


class SkillsListResponse(BaseModel):
    """Every skill visible to the user: public first, then custom."""

    model_config = ConfigDict(extra="forbid")

    skills: list[SkillResponse] = Field(default_factory=list)


class SkillUpdateRequest(BaseModel):
    """Body of ``PUT /skills/{name}``."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool


class SkillInstallRequest(BaseModel):
    """Body of ``POST /skills/install``: a ``.skill`` archive inside a thread's user-data."""

    model_config = ConfigDict(extra="forbid")

    thread_id: str
    path: str = Field(description="Virtual path of the archive, e.g. /mnt/user-data/uploads/my.skill.")


class SkillInstallResponse(BaseModel):
    """Result of an install."""

    model_config = ConfigDict(extra="forbid")

    success: bool
    skill_name: str
    message: str


def skill_response(skill: Skill, container_root: str = "/mnt/skills") -> SkillResponse:
    """The response model of one :class:`Skill`."""
    return SkillResponse(
        name=skill.name,
        description=skill.description,
        license=skill.license,
        category=skill.category,
        enabled=skill.enabled,
        path=skill.container_path(container_root),
        allowed_tools=list(skill.allowed_tools) if skill.allowed_tools is not None else None,
        required_secrets=[r.name for r in skill.required_secrets],
        version=skill.version,
    )


def skill_from_response(data: dict[str, Any]) -> Skill:
    """A :class:`Skill` from a ``GET /skills`` item (``path`` is then the sandbox path)."""
    from pathlib import PurePosixPath

    from deerflow_nb.skills.types import SecretRequirement

    path = str(data["path"])
    marker = f"/{data['category']}/"
    relative = path.split(marker, 1)[1] if marker in path else PurePosixPath(path).name
    allowed = data.get("allowed_tools")
    return Skill(name=data["name"], description=data.get("description") or "", category=data["category"],
                 path=Path(path), relative_path=relative, license=data.get("license"),
                 allowed_tools=tuple(allowed) if allowed is not None else None,
                 required_secrets=tuple(SecretRequirement(n) for n in data.get("required_secrets") or ()),
                 version=data.get("version"), enabled=bool(data.get("enabled", True)))
