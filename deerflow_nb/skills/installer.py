"""Install a custom skill from a ``.skill`` (ZIP) archive, all or nothing.

Every entry is checked before anything is written: absolute paths, ``..``
components, symlinks and other special files, more than :data:`MAX_FILES` entries
or more than :data:`MAX_UNCOMPRESSED_BYTES` declared bytes are refused, and the
``SKILL.md`` front matter is validated from the archive itself. Only then are the
files extracted into a temporary folder next to the target (with the byte budget
enforced again on the real data, since ZIP headers can lie) and renamed into place.
On any failure the temporary folder is removed, so a rejected archive leaves nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Collection
from pathlib import Path, PurePosixPath

from deerflow_nb.errors import NotFoundError, SkillInstallError
from deerflow_nb.skills.parser import SkillFormatError, parse_skill_file, parse_skill_text
from deerflow_nb.skills.types import SKILL_FILE, Skill

__all__ = ["MAX_FILES", "MAX_UNCOMPRESSED_BYTES", "SkillInstallError", "archive_path", "install_skill_archive"]

MAX_FILES = 500
MAX_UNCOMPRESSED_BYTES = 50 * 1024 * 1024
_MAX_SKILL_MD = 1024 * 1024
_DRIVE_RE = re.compile(r"^[A-Za-z]:")
_CHUNK = 1 << 16


def _entry_parts(info: zipfile.ZipInfo, archive: Path) -> tuple[str, ...]:
    name = info.filename
    if "\\" in name:
        raise SkillInstallError(f"{archive.name}: entry {name!r} uses backslashes; use '/' separators")
    if name.startswith("/") or _DRIVE_RE.match(name):
        raise SkillInstallError(f"{archive.name}: entry {name!r} is an absolute path")
    parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
    if ".." in parts:
        raise SkillInstallError(f"{archive.name}: entry {name!r} contains '..' (path traversal)")
    if "\0" in name or not parts:
        raise SkillInstallError(f"{archive.name}: entry {name!r} is not a valid path")
    kind = stat.S_IFMT(info.external_attr >> 16)  # 0: no Unix type recorded, a plain file
    if kind == stat.S_IFLNK:
        raise SkillInstallError(f"{archive.name}: entry {name!r} is a symbolic link; links are not allowed")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise SkillInstallError(f"{archive.name}: entry {name!r} is a special file (device, pipe or socket)")
    return parts


def _plan(zf: zipfile.ZipFile, archive: Path) -> tuple[list[tuple[zipfile.ZipInfo, tuple[str, ...]]], tuple[str, ...]]:
    """Validate every entry; return (file entries, prefix of the skill root inside the archive)."""
    infos = zf.infolist()
    if len(infos) > MAX_FILES:
        raise SkillInstallError(f"{archive.name}: {len(infos)} entries; at most {MAX_FILES} are allowed")
    total = sum(i.file_size for i in infos)
    if total > MAX_UNCOMPRESSED_BYTES:
        raise SkillInstallError(f"{archive.name}: {total} bytes uncompressed; at most "
                                f"{MAX_UNCOMPRESSED_BYTES} are allowed")
    files = []
    seen: dict[tuple[str, ...], str] = {}
    for info in infos:
        parts = _entry_parts(info, archive)
        if not info.is_dir():
            if parts in seen:
                raise SkillInstallError(f"{archive.name}: entry {info.filename!r} appears twice")
            seen[parts] = info.filename
            files.append((info, parts))
    for parts, name in seen.items():  # a file that is also another entry's folder
        for depth in range(1, len(parts)):
            if parts[:depth] in seen:
                raise SkillInstallError(f"{archive.name}: entry {name!r} is inside {seen[parts[:depth]]!r}, "
                                        "which is a file")
    roots = {parts[0] for _, parts in files}
    if any(parts == (SKILL_FILE,) for _, parts in files):
        prefix: tuple[str, ...] = ()
    elif len(roots) == 1 and any(parts[1:] == (SKILL_FILE,) for _, parts in files):
        prefix = (next(iter(roots)),)
    else:
        raise SkillInstallError(f"{archive.name}: no {SKILL_FILE} at the archive root or in its single "
                                "top-level folder")
    return files, prefix


def _extract(zf: zipfile.ZipFile, files: list[tuple[zipfile.ZipInfo, tuple[str, ...]]],
             prefix: tuple[str, ...], dest: Path, archive: Path) -> None:
    budget = MAX_UNCOMPRESSED_BYTES
    for info, parts in files:
        target = dest.joinpath(*parts[len(prefix):])
        executable = bool((info.external_attr >> 16) & 0o111)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "xb") as out:  # "x": never follow or reuse a path
                while chunk := src.read(_CHUNK):
                    budget -= len(chunk)
                    if budget < 0:
                        raise SkillInstallError(f"{archive.name}: more than {MAX_UNCOMPRESSED_BYTES} bytes "
                                                "uncompressed (the archive's sizes are wrong)")
                    out.write(chunk)
            os.chmod(target, 0o755 if executable else 0o644)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            # a damaged entry (bad CRC, truncated data), or one compressed or encrypted in a way zipfile cannot read
            raise SkillInstallError(f"{archive.name}: entry {info.filename!r} cannot be read: {exc}") from None
        except OSError as exc:
            raise SkillInstallError(f"{archive.name}: entry {info.filename!r} cannot be written: "
                                    f"{exc.strerror or exc}") from None


def archive_path(archive: str | os.PathLike[str]) -> Path:
    """The archive's path; :class:`NotFoundError` when it is not a file (both modes check with this)."""
    path = Path(os.fspath(archive)).expanduser()
    if not path.is_file():
        raise NotFoundError(f"skill archive {path} not found")
    return path


def install_skill_archive(archive: str | os.PathLike[str], custom_root: Path,
                          reserved_names: Collection[str] = ()) -> Skill:
    """Install ``archive`` as ``custom_root/<name>`` and return the new skill.

    Args:
        archive: a ``.skill`` ZIP file.
        custom_root: the user's custom skills folder (created if needed).
        reserved_names: names that may not be used (the public skills).

    Raises:
        SkillInstallError: the archive is unsafe or invalid, the name is taken, or the
            skill is already installed; nothing is written in that case.
    """
    path = archive_path(archive)
    if not zipfile.is_zipfile(path):
        raise SkillInstallError(f"{path.name}: not a ZIP archive (a .skill file is a ZIP of the skill folder)")
    with zipfile.ZipFile(path) as zf:
        files, prefix = _plan(zf, path)
        skill_md = zf.getinfo("/".join((*prefix, SKILL_FILE)))
        if skill_md.file_size > _MAX_SKILL_MD:
            raise SkillInstallError(f"{path.name}: {SKILL_FILE} is larger than {_MAX_SKILL_MD} bytes")
        try:
            text = zf.read(skill_md).decode("utf-8")
            parsed = parse_skill_text(text, source=f"{path.name}:{skill_md.filename}", category="custom",
                                      path=custom_root, relative_path=".", strict=True)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            raise SkillInstallError(f"{path.name}: entry {skill_md.filename!r} cannot be read: {exc}") from None
        except UnicodeDecodeError:
            raise SkillInstallError(f"invalid {SKILL_FILE}: {path.name}:{skill_md.filename} is not UTF-8 "
                                    "text") from None
        except SkillFormatError as exc:
            raise SkillInstallError(f"invalid {SKILL_FILE}: {exc}") from None
        if parsed.name in reserved_names:
            raise SkillInstallError(f"{path.name}: skill name {parsed.name!r} clashes with a public skill")
        final = custom_root / parsed.name
        if final.exists():
            raise SkillInstallError(f"custom skill {parsed.name!r} is already installed; uninstall it first")
        created_root = not custom_root.exists()
        custom_root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".install-{parsed.name}-", dir=custom_root))
        try:
            _extract(zf, files, prefix, staging / "skill", path)
            os.rename(staging / "skill", final)  # atomic within one folder; fails if `final` appeared
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            if created_root and custom_root.exists() and not any(custom_root.iterdir()):
                with contextlib.suppress(OSError):
                    custom_root.rmdir()
    return parse_skill_file(final, category="custom", root=custom_root)
