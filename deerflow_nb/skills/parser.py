"""Parse and validate ``SKILL.md`` front matter.

Discovery is lenient (unknown keys are ignored, a malformed skill is skipped by the
loader with a warning); install is strict (unknown keys are rejected) so a new
archive cannot smuggle in settings this version does not understand.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import yaml

from deerflow_nb.errors import UsageError
from deerflow_nb.skills.types import SKILL_FILE, Category, SecretRequirement, Skill

__all__ = [
    "INSTALL_KEYS",
    "NAME_RE",
    "SkillFormatError",
    "parse_allowed_tools",
    "parse_required_secrets",
    "parse_skill_file",
    "parse_skill_text",
    "split_frontmatter",
]

logger = logging.getLogger(__name__)

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FRONTMATTER_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
#: Front-matter keys accepted by ``install`` (the reference's set plus optional metadata).
INSTALL_KEYS = frozenset({
    "name", "description", "license", "allowed-tools", "required-secrets", "version", "author",
    "compatibility", "metadata",
})


class SkillFormatError(UsageError):
    """A ``SKILL.md`` is missing or invalid; the message names the file and the field."""


def split_frontmatter(text: str, source: str) -> tuple[dict[str, Any], str]:
    """``(front matter mapping, body)``; raises :class:`SkillFormatError` naming ``source``."""
    match = _FRONTMATTER_RE.match(text.lstrip("\ufeff"))
    if match is None:
        raise SkillFormatError(f"{source}: missing YAML front matter (the file must start with '---')")
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise SkillFormatError(f"{source}: invalid YAML front matter: {exc}") from None
    if not isinstance(data, dict):
        raise SkillFormatError(f"{source}: front matter must be a mapping of keys to values")
    return data, text.lstrip("\ufeff")[match.end():]


def parse_allowed_tools(value: Any, source: str) -> tuple[str, ...] | None:
    """``allowed-tools`` as a list, or a comma/space separated string; ``None`` when absent."""
    if value is None:
        return None
    if isinstance(value, str):
        items = [v for v in re.split(r"[,\s]+", value) if v]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value if v.strip()]
    else:
        raise SkillFormatError(f"{source}: 'allowed-tools' must be a list of tool names or a string")
    return tuple(dict.fromkeys(items))


def parse_required_secrets(value: Any, source: str) -> tuple[SecretRequirement, ...]:
    """``required-secrets`` as names or ``{name, optional}`` mappings; malformed entries are dropped."""
    if value is None:
        return ()
    if not isinstance(value, list):
        logger.warning("%s: 'required-secrets' must be a list; ignoring it", source)
        return ()
    found: dict[str, SecretRequirement] = {}
    for index, entry in enumerate(value):
        name: Any = entry
        optional = False
        if isinstance(entry, dict):
            name, optional = entry.get("name"), bool(entry.get("optional", False))
        if not isinstance(name, str) or not _ENV_NAME_RE.match(name):
            logger.warning("%s: required-secrets[%d] is not a valid variable name; dropped", source, index)
            continue
        found[name] = SecretRequirement(name, optional)
    return tuple(found.values())


def _optional_text(data: dict[str, Any], key: str, source: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise SkillFormatError(f"{source}: '{key}' must be a string")
    return value.strip() or None


def parse_skill_text(
    text: str, *, source: str, category: Category, path: Path, relative_path: str, strict: bool = False
) -> Skill:
    """Build a :class:`Skill` from the text of a ``SKILL.md``.

    Raises:
        SkillFormatError: front matter missing or invalid; the message names ``source`` and the key.
    """
    data, _body = split_frontmatter(text, source)
    if strict:
        unknown = sorted(set(data) - INSTALL_KEYS)
        if unknown:
            raise SkillFormatError(f"{source}: unknown front-matter key(s) {unknown}; "
                                   f"allowed: {sorted(INSTALL_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SkillFormatError(f"{source}: 'name' is required")
    name = name.strip()
    if len(name) > MAX_NAME or not NAME_RE.match(name):
        raise SkillFormatError(f"{source}: 'name' {name!r} must be hyphen-case (a-z, 0-9, '-'), "
                               f"at most {MAX_NAME} characters")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillFormatError(f"{source}: 'description' is required")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION or "<" in description or ">" in description:
        raise SkillFormatError(f"{source}: 'description' must be at most {MAX_DESCRIPTION} characters "
                               "without angle brackets")
    return Skill(
        name=name,
        description=description,
        category=category,
        path=path,
        relative_path=relative_path,
        license=_optional_text(data, "license", source),
        allowed_tools=parse_allowed_tools(data.get("allowed-tools"), source),
        required_secrets=parse_required_secrets(data.get("required-secrets"), source),
        version=_optional_text(data, "version", source),
        author=_optional_text(data, "author", source),
        compatibility=_optional_text(data, "compatibility", source),
    )


def parse_skill_file(skill_dir: Path, *, category: Category, root: Path, strict: bool = False) -> Skill:
    """Parse ``skill_dir/SKILL.md``; ``root`` is the category root the folder lives under."""
    skill_file = skill_dir / SKILL_FILE
    try:
        text = skill_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SkillFormatError(f"{skill_file}: not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillFormatError(f"{skill_file}: cannot be read: {exc}") from None
    relative = skill_dir.relative_to(root).as_posix()
    return parse_skill_text(text, source=str(skill_file), category=category, path=skill_dir,
                            relative_path=relative, strict=strict)
