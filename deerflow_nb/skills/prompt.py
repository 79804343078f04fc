"""How enabled skills reach the model: a static system-prompt section, or ``describe_skill``.

By default every enabled skill is listed with its description and sandbox path.
With ``skills.deferred_discovery: true`` only the names are listed and the model
calls ``describe_skill`` for details, which keeps the prompt short when many skills
are installed. Either way the section depends only on the installed skills, so the
system prompt stays byte-identical from turn to turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field

from deerflow_nb.skills.types import Skill

__all__ = ["DESCRIBE_SKILL_TOOL", "build_describe_skill_tool", "describe_skills", "skills_prompt_section"]

DESCRIBE_SKILL_TOOL = "describe_skill"

_INTRO = (
    "Skills are folders of instructions and scripts for specialised tasks. When a request matches a "
    "skill, read its SKILL.md with read_file before you start and follow it; run its scripts from the "
    "skill folder (read-only) and write results to /mnt/user-data/outputs. A user can activate a skill "
    "explicitly by starting a message with /skill-name."
)


def skills_prompt_section(skills: Sequence[Skill], container_root: str, *, deferred: bool = False) -> str | None:
    """The ``<skill_system>`` section for ``skills`` (``None`` when there are none)."""
    if not skills:
        return None
    if deferred:
        names = ", ".join(s.name for s in skills)
        body = (f"{_INTRO}\nAvailable skills (call {DESCRIBE_SKILL_TOOL} with their names to see what they "
                f"do and where they live): {names}")
    else:
        lines = [f"- {s.name}: {s.description} ({s.container_file(container_root)})" for s in skills]
        body = f"{_INTRO}\n<available_skills>\n" + "\n".join(lines) + "\n</available_skills>"
    return f"<skill_system>\n{body}\n</skill_system>"


def describe_skills(skills: Sequence[Skill], names: Sequence[str], container_root: str) -> str:
    """The metadata of the requested skills, as text for the model."""
    by_name = {s.name: s for s in skills}
    blocks = []
    for name in names:
        skill = by_name.get(name.strip().lstrip("/"))
        if skill is None:
            blocks.append(f"{name}: no such enabled skill; enabled skills: {', '.join(by_name) or 'none'}")
            continue
        lines = [f"name: {skill.name}", f"description: {skill.description}",
                 f"skill_file: {skill.container_file(container_root)}"]
        if skill.allowed_tools is not None:
            lines.append(f"allowed-tools: {', '.join(skill.allowed_tools)}")
        if skill.required_secrets:
            lines.append(f"required-secrets: {', '.join(r.name for r in skill.required_secrets)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def build_describe_skill_tool(skills: Callable[[], Sequence[Skill]], container_root: str) -> BaseTool:
    """The ``describe_skill`` tool over the live list of enabled skills."""

    def describe_skill(
        names: Annotated[list[str], Field(description="Skill names to describe, e.g. ['data-analysis'].")],
    ) -> str:
        return describe_skills(skills(), names, container_root)

    return StructuredTool.from_function(
        func=describe_skill,
        name=DESCRIBE_SKILL_TOOL,
        description="Show the description, SKILL.md path, allowed tools and secrets of skills by name.",
    )
