from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import pytest

from deerflow_nb.errors import NotFoundError
from deerflow_nb.skills import SkillInstallError, install_skill_archive
from deerflow_nb.skills import installer as installer_module

from .conftest import skill_md, tree

GOOD = skill_md("my-skill", extra="version: '1.0'\nauthor: Ada\n")


@pytest.fixture
def custom_root(tmp_path: Path) -> Path:
    return tmp_path / "home" / "users" / "u" / "skills" / "custom"


def test_valid_archive_with_top_folder_installs(archive, custom_root: Path):
    path = archive({"my-skill/SKILL.md": GOOD, "my-skill/scripts/run.sh": "echo hi\n",
                    "my-skill/data/ref.txt": "x"})
    skill = install_skill_archive(path, custom_root)
    assert skill.name == "my-skill" and skill.category == "custom" and skill.version == "1.0"
    assert tree(custom_root) == ["my-skill", "my-skill/SKILL.md", "my-skill/data", "my-skill/data/ref.txt",
                                 "my-skill/scripts", "my-skill/scripts/run.sh"]
    assert os.access(custom_root / "my-skill/scripts/run.sh", os.X_OK)
    assert not os.access(custom_root / "my-skill/data/ref.txt", os.X_OK)


def test_root_layout_is_named_after_the_skill(archive, custom_root: Path):
    skill = install_skill_archive(archive({"SKILL.md": GOOD, "notes.md": "n"}), custom_root)
    assert skill.path == custom_root / "my-skill"
    assert (custom_root / "my-skill" / "notes.md").read_text() == "n"


MALICIOUS = {
    "zip-slip": ({"my-skill/SKILL.md": GOOD, "my-skill/../../evil.py": "x"}, "path traversal"),
    "dotdot-root": ({"SKILL.md": GOOD, "../outside.txt": "x"}, "path traversal"),
    "absolute": ({"SKILL.md": GOOD, "/etc/cron.d/evil": "x"}, "absolute path"),
    "drive": ({"SKILL.md": GOOD, "C:/evil.txt": "x"}, "absolute path"),
    "backslash": ({"SKILL.md": GOOD, "..\\evil.txt": "x"}, "backslashes"),
    "no-skill-md": ({"README.md": "hi"}, "no SKILL.md"),
    "two-top-folders": ({"a/SKILL.md": GOOD, "b/x.txt": "x"}, "no SKILL.md"),
    "bad-front-matter": ({"SKILL.md": "---\nname: [x\n---\n"}, "invalid SKILL.md"),
    "unknown-key": ({"SKILL.md": skill_md("my-skill", extra="hooks: run\n")}, "unknown front-matter key"),
    "public-clash": ({"SKILL.md": skill_md("alpha")}, "clashes with a public skill"),
}


@pytest.mark.parametrize("case", sorted(MALICIOUS))
def test_malicious_or_invalid_archives_write_nothing(case: str, archive, custom_root: Path, tmp_path: Path):
    entries, message = MALICIOUS[case]
    before = tree(tmp_path / "home")
    with pytest.raises(SkillInstallError, match=message):
        install_skill_archive(archive(entries), custom_root, reserved_names={"alpha"})
    assert tree(tmp_path / "home") == before
    assert not (tmp_path / "evil.py").exists() and not (tmp_path / "outside.txt").exists()


def test_entries_without_unix_type_bits_are_plain_files(tmp_path: Path, custom_root: Path):
    path = tmp_path / "plain.skill"
    with zipfile.ZipFile(path, "w") as zf:  # writestr(name, ...) records mode 0o600 without a type
        zf.writestr("SKILL.md", GOOD)
        zf.writestr("notes.txt", "n")
    assert install_skill_archive(path, custom_root).name == "my-skill"


def test_fifo_entry_is_rejected(tmp_path: Path, custom_root: Path):
    path = tmp_path / "fifo.skill"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("SKILL.md", GOOD)
        info = zipfile.ZipInfo("pipe")
        info.external_attr = (stat.S_IFIFO | 0o644) << 16
        zf.writestr(info, "")
    with pytest.raises(SkillInstallError, match="special file"):
        install_skill_archive(path, custom_root)
    assert tree(tmp_path / "home") == []


def test_symlink_entry_is_rejected(archive, custom_root: Path, tmp_path: Path):
    path = archive({"SKILL.md": GOOD}, symlinks={"link": "/etc/passwd"})
    with pytest.raises(SkillInstallError, match="symbolic link"):
        install_skill_archive(path, custom_root)
    assert tree(tmp_path / "home") == []


def test_too_many_files(archive, custom_root: Path, tmp_path: Path):
    entries: dict[str, bytes | str] = {"SKILL.md": GOOD, **{f"f{i}.txt": "x" for i in range(500)}}
    with pytest.raises(SkillInstallError, match="at most 500"):
        install_skill_archive(archive(entries), custom_root)
    assert tree(tmp_path / "home") == []


def test_oversized_declared_size(archive, custom_root: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(installer_module, "MAX_UNCOMPRESSED_BYTES", 1000)
    with pytest.raises(SkillInstallError, match="bytes uncompressed"):
        install_skill_archive(archive({"SKILL.md": GOOD, "big.bin": b"\0" * 2000}), custom_root)
    assert tree(tmp_path / "home") == []


def test_real_50mb_limit_rejects_zip_bomb(archive, custom_root: Path, tmp_path: Path):
    # 51 MB of zeros compresses to ~50 KB: the declared size gives it away before extraction.
    path = archive({"SKILL.md": GOOD, "bomb.bin": b"\0" * (51 * 1024 * 1024)})
    with pytest.raises(SkillInstallError, match="at most 52428800"):
        install_skill_archive(path, custom_root)
    assert tree(tmp_path / "home") == []


def test_lying_size_header_is_caught_during_extraction_and_cleaned_up(archive, custom_root, tmp_path, monkeypatch):
    custom_root.mkdir(parents=True)
    path = archive({"SKILL.md": GOOD, "big.bin": b"\0" * 5000})
    monkeypatch.setattr(installer_module, "MAX_UNCOMPRESSED_BYTES", 3000)
    original_infolist = installer_module.zipfile.ZipFile.infolist

    def small_infolist(self):
        infos = original_infolist(self)
        for info in infos:
            if info.filename == "big.bin":
                info.file_size = 10
        return infos

    monkeypatch.setattr(installer_module.zipfile.ZipFile, "infolist", small_infolist)
    with pytest.raises(SkillInstallError, match="sizes are wrong|cannot be read"):
        install_skill_archive(path, custom_root)
    assert tree(custom_root) == []  # the staging folder is gone


def test_already_installed_and_not_a_zip(archive, custom_root: Path, tmp_path: Path):
    install_skill_archive(archive({"SKILL.md": GOOD}), custom_root)
    with pytest.raises(SkillInstallError, match="already installed"):
        install_skill_archive(archive({"SKILL.md": GOOD}, name="again.skill"), custom_root)
    text = tmp_path / "text.skill"
    text.write_text("not a zip")
    with pytest.raises(SkillInstallError, match="not a ZIP"):
        install_skill_archive(text, custom_root)
    with pytest.raises(NotFoundError, match="not found"):  # nothing refused: there is no archive (both modes)
        install_skill_archive(tmp_path / "missing.skill", custom_root)


def _raw_archive(path: Path, entries: list[tuple[str, bytes]], *, patch=None) -> Path:
    import warnings

    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as zf:
        warnings.simplefilter("ignore")  # a duplicate name is the point of one case
        for name, data in entries:
            zf.writestr(zipfile.ZipInfo(name), data)
    if patch is not None:
        path.write_bytes(patch(path.read_bytes()))
    return path


def _flag_encrypted(data: bytes) -> bytes:
    # the general-purpose bit flag (bit 0: encrypted) in every local and central header
    out = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (start := out.find(signature, start)) != -1:
            out[start + offset] |= 1
            start += 4
    return bytes(out)


@pytest.mark.parametrize(("case", "entries", "patch", "why"), [
    ("duplicate", [("s/SKILL.md", GOOD.encode()), ("s/SKILL.md", GOOD.encode())], None, "appears twice"),
    ("file-as-folder", [("s/SKILL.md", GOOD.encode()), ("s/data", b"x"), ("s/data/x.txt", b"y")], None,
     "which is a file"),
    ("bad-crc", [("s/SKILL.md", GOOD.encode()), ("s/notes.txt", b"hello world")],
     lambda b: b.replace(b"hello world", b"hello w0rld"), "'s/notes.txt' cannot be read"),
    ("encrypted", [("s/SKILL.md", GOOD.encode())], _flag_encrypted, "'s/SKILL.md' cannot be read"),
])
def test_damaged_archives_are_refused_naming_the_entry(case, entries, patch, why, custom_root: Path, tmp_path: Path):
    path = _raw_archive(tmp_path / f"{case}.skill", entries, patch=patch)
    with pytest.raises(SkillInstallError, match=why):
        install_skill_archive(path, custom_root)
    assert not custom_root.exists() or tree(custom_root) == []  # nothing written, no staging folder left
