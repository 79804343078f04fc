from __future__ import annotations

import os
from pathlib import Path

import pytest

from deerflow_nb.errors import SandboxPathError
from deerflow_nb.sandbox.paths import Mount, PathMapping, thread_mounts


@pytest.fixture
def layout(tmp_path: Path) -> tuple[PathMapping, Path, Path]:
    user_data = tmp_path / "ud"
    for name in ("workspace", "uploads", "outputs"):
        (user_data / name).mkdir(parents=True)
    skills = tmp_path / "skills"
    (skills / "demo").mkdir(parents=True)
    (skills / "demo" / "SKILL.md").write_text("# demo")
    mapping = PathMapping(thread_mounts(user_data, extra=[Mount("/mnt/skills", skills, read_only=True)]))
    return mapping, user_data, skills


def test_virtual_paths_resolve_to_host(layout) -> None:
    mapping, user_data, skills = layout
    assert mapping.to_host("/mnt/user-data/workspace/a.txt") == user_data.resolve() / "workspace" / "a.txt"
    assert mapping.to_host("/mnt/skills/demo/SKILL.md") == (skills / "demo" / "SKILL.md").resolve()
    assert mapping.to_host("/mnt/user-data/outputs/../uploads/x") == user_data.resolve() / "uploads" / "x"


def test_relative_paths_start_in_the_workspace(layout) -> None:
    mapping, user_data, _ = layout
    assert mapping.to_host("notes/a.md") == user_data.resolve() / "workspace" / "notes" / "a.md"
    assert mapping.normalize("a.md") == "/mnt/user-data/workspace/a.md"


@pytest.mark.parametrize(
    "path",
    [
        "/mnt/user-data/workspace/../../../etc/passwd",
        "../../../../etc/passwd",
        "/etc/passwd",
        "/mnt/user-data-other/x",
        "/mnt",
        "",
        "bad\0name",
    ],
)
def test_escapes_are_refused(layout, path: str) -> None:
    mapping, _, _ = layout
    with pytest.raises(SandboxPathError):
        mapping.to_host(path)


def test_absolute_host_path_is_refused(layout) -> None:
    mapping, user_data, _ = layout
    with pytest.raises(SandboxPathError, match="outside the sandbox"):
        mapping.to_host(str(user_data / "workspace" / "a.txt"))


def test_symlink_to_outside_is_refused(layout, tmp_path: Path) -> None:
    mapping, user_data, _ = layout
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    os.symlink(outside, user_data / "workspace" / "link")
    with pytest.raises(SandboxPathError, match="symlink"):
        mapping.to_host("/mnt/user-data/workspace/link/secret.txt")


def test_symlink_between_mounts_is_allowed_but_keeps_read_only(layout) -> None:
    mapping, user_data, skills = layout
    os.symlink(skills, user_data / "workspace" / "skills-link")
    assert mapping.to_host("/mnt/user-data/workspace/skills-link/demo/SKILL.md").read_text() == "# demo"
    with pytest.raises(SandboxPathError, match="read-only"):
        mapping.to_host("/mnt/user-data/workspace/skills-link/demo/new.md", write=True)


@pytest.mark.parametrize("path", ["/mnt/skills/demo/SKILL.md", "/mnt/user-data/top-level.txt"])
def test_writes_to_read_only_mounts_are_refused(layout, path: str) -> None:
    mapping, _, _ = layout
    mapping.to_host(path)  # reading is fine
    with pytest.raises(SandboxPathError, match="read-only"):
        mapping.to_host(path, write=True)


def test_translate_command_rewrites_prefixes_at_path_boundaries(layout) -> None:
    mapping, user_data, skills = layout
    command = (
        "cat /mnt/user-data/workspace/a.txt > /mnt/user-data/outputs/b; ls /mnt/skills; echo /mnt/user-data2"
    )
    translated = mapping.translate_command(command)
    assert f"cat {user_data}/workspace/a.txt > {user_data}/outputs/b" in translated
    assert f"ls {skills};" in translated
    assert translated.endswith("echo /mnt/user-data2")


def test_untranslate_output_maps_host_paths_back(layout) -> None:
    mapping, user_data, skills = layout
    text = f"{user_data}/workspace/a.txt\n{skills.resolve()}/demo\n{user_data}x/other"
    assert (
        mapping.untranslate_output(text)
        == f"/mnt/user-data/workspace/a.txt\n/mnt/skills/demo\n{user_data}x/other"
    )


def test_to_virtual(layout) -> None:
    mapping, user_data, _ = layout
    assert mapping.to_virtual(user_data / "outputs" / "r.md") == "/mnt/user-data/outputs/r.md"
    with pytest.raises(SandboxPathError):
        mapping.to_virtual("/somewhere/else")


def test_mount_prefix_must_be_normalised(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="normalised"):
        PathMapping([Mount("/mnt/x/", tmp_path)])


def test_untranslate_output_prefers_the_longest_folder_and_respects_boundaries(tmp_path: Path) -> None:
    from deerflow_nb.sandbox.paths import Mount, PathMapping

    root = tmp_path / "data"
    (root / "workspace").mkdir(parents=True)
    mapping = PathMapping([Mount("/mnt/user-data", root, read_only=True),
                           Mount("/mnt/user-data/workspace", root / "workspace")])
    text = (f"{root}/workspace/a {root}/b {root}/workspace2/c {root}-x "
            f"'{root}/workspace' {root}/workspace.bak {root}")
    assert mapping.untranslate_output(text) == (
        "/mnt/user-data/workspace/a /mnt/user-data/b /mnt/user-data/workspace2/c "
        f"{root}-x '/mnt/user-data/workspace' /mnt/user-data/workspace.bak /mnt/user-data")
    assert mapping.untranslate_output("nothing here") == "nothing here"
