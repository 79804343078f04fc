"""Skills: folders with ``SKILL.md`` that teach the agent specialised tasks.

Discovery (:func:`load_skills`), enabled state, safe install from ``.skill``
archives, the system-prompt section, slash activation with tool policy and
request-scoped secrets, and the ``agent.skills`` notebook object.
"""

from deerflow_nb.skills.activation import (
    RESERVED_COMMANDS,
    SkillActivationMiddleware,
    SlashCommand,
    parse_slash,
    resolve_activation,
)
from deerflow_nb.skills.client import SkillList, SkillsClient
from deerflow_nb.skills.installer import MAX_FILES, MAX_UNCOMPRESSED_BYTES, SkillInstallError, install_skill_archive
from deerflow_nb.skills.loader import discover_skills, load_skills
from deerflow_nb.skills.manager import SkillManager
from deerflow_nb.skills.parser import SkillFormatError, parse_skill_file, parse_skill_text
from deerflow_nb.skills.plugin import SkillsPlugin
from deerflow_nb.skills.prompt import build_describe_skill_tool, skills_prompt_section
from deerflow_nb.skills.types import SecretRequirement, Skill

__all__ = [
    "MAX_FILES",
    "MAX_UNCOMPRESSED_BYTES",
    "RESERVED_COMMANDS",
    "SecretRequirement",
    "Skill",
    "SkillActivationMiddleware",
    "SkillFormatError",
    "SkillInstallError",
    "SkillList",
    "SkillManager",
    "SkillsClient",
    "SkillsPlugin",
    "SlashCommand",
    "build_describe_skill_tool",
    "discover_skills",
    "install_skill_archive",
    "load_skills",
    "parse_skill_file",
    "parse_skill_text",
    "parse_slash",
    "resolve_activation",
    "skills_prompt_section",
]
