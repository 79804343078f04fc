from __future__ import annotations

import logging
from pathlib import Path

import pytest

from deerflow_nb.skills import SkillFormatError, load_skills, parse_skill_text
from deerflow_nb.skills.types import SecretRequirement

from .conftest import write_skill


def test_discovery_public_then_custom_and_nested_skill_md_is_not_a_skill(public_root: Path, tmp_path: Path):
    custom = tmp_path / "custom"
    gamma = write_skill(custom, "gamma")
    write_skill(gamma / "examples", "inner")  # nested inside a skill: part of gamma
    write_skill(public_root / "group", "delta")  # grouping folder: a skill one level deeper
    skills = load_skills(public_root, custom)
    assert [(s.name, s.category) for s in skills] == [
        ("alpha", "public"), ("beta", "public"), ("delta", "public"), ("gamma", "custom")]
    delta = next(s for s in skills if s.name == "delta")
    assert delta.container_file() == "/mnt/skills/public/group/delta/SKILL.md"
    assert next(s for s in skills if s.name == "beta").allowed_tools == ("read_file", "bash")


def test_malformed_skill_is_skipped_with_a_warning_naming_the_file(public_root: Path, caplog):
    bad = public_root / "broken"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: [unclosed\n---\nbody\n")
    with caplog.at_level(logging.WARNING, logger="deerflow_nb.skills.loader"):
        skills = load_skills(public_root, None)
    assert [s.name for s in skills] == ["alpha", "beta"]
    assert str(bad / "SKILL.md") in caplog.text


def test_custom_skill_cannot_shadow_a_public_one(public_root: Path, tmp_path: Path, caplog):
    custom = tmp_path / "custom"
    write_skill(custom, "alpha", description="Impostor.")
    with caplog.at_level(logging.WARNING):
        skills = load_skills(public_root, custom)
    alpha = [s for s in skills if s.name == "alpha"]
    assert len(alpha) == 1 and alpha[0].category == "public"
    assert "already used" in caplog.text


def _parse(text: str, strict: bool = False):
    return parse_skill_text(text, source="x/SKILL.md", category="custom", path=Path("x"), relative_path="x",
                            strict=strict)


def test_front_matter_fields_and_secret_forms(caplog):
    skill = _parse("---\nname: erp\ndescription: ERP export.\nlicense: MIT\nallowed-tools: bash, read_file\n"
                   "required-secrets:\n  - ERP_TOKEN\n  - {name: ERP_USER, optional: true}\n  - 'bad name'\n"
                   "version: 1.2\n---\nbody")
    assert skill.allowed_tools == ("bash", "read_file")
    assert skill.required_secrets == (SecretRequirement("ERP_TOKEN"), SecretRequirement("ERP_USER", True))
    assert skill.version == "1.2" and skill.license == "MIT"
    assert "required-secrets[2]" in caplog.text


@pytest.mark.parametrize(("text", "message"), [
    ("no front matter", "missing YAML front matter"),
    ("---\ndescription: d\n---\n", "'name' is required"),
    ("---\nname: Bad_Name\ndescription: d\n---\n", "hyphen-case"),
    ("---\nname: ok\n---\n", "'description' is required"),
    ("---\nname: ok\ndescription: has <tags>\n---\n", "angle brackets"),
    ("---\nname: ok\ndescription: d\nallowed-tools: 3\n---\n", "allowed-tools"),
])
def test_invalid_front_matter_names_the_file_and_field(text: str, message: str):
    with pytest.raises(SkillFormatError, match=message) as info:
        _parse(text)
    assert "x/SKILL.md" in str(info.value)


def test_strict_mode_rejects_unknown_keys_but_accepts_install_metadata():
    ok = _parse("---\nname: ok\ndescription: d\nversion: '1'\nauthor: me\ncompatibility: py3\n---\n", strict=True)
    assert ok.author == "me" and ok.compatibility == "py3"
    with pytest.raises(SkillFormatError, match="unknown front-matter key"):
        _parse("---\nname: ok\ndescription: d\nhooks: evil\n---\n", strict=True)
