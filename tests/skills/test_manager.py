from __future__ import annotations

import json
from pathlib import Path

import pytest

from deerflow_nb.config import AppConfig, Paths
from deerflow_nb.config.schema import SkillsConfig
from deerflow_nb.errors import ConfigError, NotFoundError, UsageError
from deerflow_nb.skills import SkillInstallError, SkillManager
from deerflow_nb.skills.schemas import SkillInstallResponse, SkillResponse, SkillsListResponse

from .conftest import skill_md, tree, write_skill


@pytest.fixture
def manager(home: Path, public_root: Path) -> SkillManager:
    config = AppConfig(skills=SkillsConfig(path=str(public_root)))
    return SkillManager(Paths(home), "u1", lambda: config)


def test_enable_disable_persists_per_user_over_operator_config(manager: SkillManager, home: Path, tmp_path,
                                                                monkeypatch):
    extensions = tmp_path / "extensions_config.json"
    extensions.write_text(json.dumps({"skills": {"alpha": {"enabled": False}}}))
    monkeypatch.setenv("DEER_FLOW_EXTENSIONS_CONFIG_PATH", str(extensions))
    assert [s.enabled for s in manager.scan()] == [False, True]
    manager.set_enabled("alpha", True)
    state = json.loads((home / "users/u1/skills/state.json").read_text())
    assert state["skills"]["alpha"] == {"enabled": True}
    assert manager.get("alpha").enabled is True
    manager.set_enabled("beta", False)
    assert [s.name for s in manager.enabled()] == ["alpha"]
    # another user is not affected by u1's choices
    other = SkillManager(manager.paths, "u2", manager._config)
    assert [s.enabled for s in other.scan()] == [False, True]


def test_unknown_skill_and_bad_values(manager: SkillManager):
    with pytest.raises(NotFoundError, match="known skills: alpha, beta"):
        manager.get("nope")
    with pytest.raises(UsageError, match="true or false"):
        manager.set_enabled("alpha", "yes")  # type: ignore[arg-type]


def test_corrupt_state_file_is_reported_not_overwritten(manager: SkillManager, home: Path):
    state = home / "users/u1/skills/state.json"
    state.parent.mkdir(parents=True)
    state.write_text("{broken")
    with pytest.raises(ConfigError, match="state.json"):
        manager.set_enabled("alpha", False)
    assert state.read_text() == "{broken"


def test_install_uninstall_and_public_protection(manager: SkillManager, archive, home: Path):
    skill = manager.install(archive({"SKILL.md": skill_md("mine")}))
    assert skill.category == "custom" and manager.get("mine").path == home / "users/u1/skills/custom/mine"
    with pytest.raises(SkillInstallError, match="clashes with a public skill"):
        manager.install(archive({"SKILL.md": skill_md("alpha")}, name="clash.skill"))
    manager.set_enabled("mine", False)
    manager.uninstall("mine")
    assert tree(home / "users/u1/skills/custom") == []
    assert "mine" not in json.loads((home / "users/u1/skills/state.json").read_text())["skills"]
    with pytest.raises(UsageError, match="public skill; disable it"):
        manager.uninstall("alpha")


def test_scan_is_memoised_until_something_changes(manager: SkillManager, public_root: Path):
    first = manager.scan()
    assert manager.scan() == first and manager._cache is not None
    key = manager.signature()
    (public_root / "alpha" / "SKILL.md").write_text(skill_md("alpha", description="Changed."))
    write_skill(public_root, "gamma")
    assert manager.signature() != key
    assert [s.description for s in manager.scan() if s.name == "alpha"] == ["Changed."]
    assert "gamma" in [s.name for s in manager.scan()]


def test_gateway_methods_conform_to_the_route_models(skills_agent, archive):
    agent = skills_agent()
    listed = agent.list_skills()
    SkillsListResponse.model_validate(listed)
    assert [s["name"] for s in listed["skills"]] == ["alpha", "beta"]
    beta = SkillResponse.model_validate(agent.get_skill("beta"))
    assert beta.path == "/mnt/skills/public/beta" and beta.allowed_tools == ["read_file", "bash"]
    updated = SkillResponse.model_validate(agent.update_skill("beta", enabled=False))
    assert updated.enabled is False and agent.get_skill("beta")["enabled"] is False
    installed = SkillInstallResponse.model_validate(agent.install_skill(archive({"SKILL.md": skill_md("mine")})))
    assert installed.success and installed.skill_name == "mine"
    assert agent.get_skill("mine")["category"] == "custom"
    assert "/tmp" not in json.dumps(agent.list_skills())  # host paths never leave the process


def test_skills_object_lists_and_renders(skills_agent):
    agent = skills_agent()
    skills = agent.skills.list()
    assert [(s.name, s.category, s.enabled) for s in skills] == [("alpha", "public", True), ("beta", "public", True)]
    assert "| alpha | public | yes |" in skills._repr_markdown_()
    frame = skills.to_pandas()
    assert list(frame.columns) == ["name", "description", "category", "enabled", "path"] and len(frame) == 2
    assert agent.skills.disable("alpha").enabled is False
    assert [s.name for s in agent.skills.list(enabled_only=True)] == ["beta"]
    assert "1/2 enabled" in repr(agent.skills)


def test_custom_root_appearing_empty_does_not_change_the_signature(manager: SkillManager, home: Path):
    manager.scan()
    before = manager.signature()
    (home / "users/u1/skills/custom").mkdir(parents=True)  # what the sandbox does on a first run
    assert manager.signature() == before
    write_skill(home / "users/u1/skills/custom", "mine")
    assert manager.signature() != before
