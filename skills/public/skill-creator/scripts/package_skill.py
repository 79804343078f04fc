"""Validate a skill folder and package it as NAME.skill (a ZIP archive) for installation.

Usage: package_skill.py SKILL_DIR [--output DIR]
Checks: SKILL.md with front matter, a valid name and description, no symlinks, at most 500 files
and 50 MB, and no secrets-looking files (.env).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import zipfile
from pathlib import Path

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
FRONT_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
MAX_FILES, MAX_BYTES = 500, 50 * 1024 * 1024
SKIP = {"__pycache__", ".git", ".ipynb_checkpoints"}


def front_matter(text: str) -> dict:
    """The front matter as a dict (PyYAML when present, else simple ``key: value`` lines)."""
    match = FRONT_RE.match(text)
    if match is None:
        raise SystemExit("error: SKILL.md must start with YAML front matter between '---' lines")
    try:
        import yaml

        data = yaml.safe_load(match.group(1))
    except ImportError:
        data = {}
        for line in match.group(1).splitlines():
            key, sep, value = line.partition(":")
            if sep and not line.startswith((" ", "-")):
                data[key.strip()] = value.strip()
    if not isinstance(data, dict):
        raise SystemExit("error: the front matter must be a mapping")
    return data


def validate(skill_dir: Path) -> tuple[str, list[Path]]:
    """Return (name, files to package) or exit with the problem."""
    skill_md = skill_dir / "SKILL.md"
    if not skill_md.is_file():
        raise SystemExit(f"error: {skill_md} not found")
    data = front_matter(skill_md.read_text(encoding="utf-8"))
    name = str(data.get("name") or "")
    if not NAME_RE.match(name) or len(name) > 64:
        raise SystemExit(f"error: name {name!r} must be hyphen-case (a-z, 0-9, '-'), at most 64 characters")
    description = str(data.get("description") or "").strip()
    if not description or "<" in description or ">" in description or len(description) > 1024:
        raise SystemExit("error: description must be 1-1024 characters without angle brackets")
    files: list[Path] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(skill_dir):
        dirnames[:] = [d for d in dirnames if d not in SKIP]
        for entry in [*dirnames, *filenames]:
            if (Path(dirpath) / entry).is_symlink():
                raise SystemExit(f"error: {Path(dirpath) / entry} is a symbolic link; copy the file instead")
        for filename in filenames:
            path = Path(dirpath) / filename
            if filename == ".env" or filename.endswith((".pem", ".key")):
                raise SystemExit(f"error: {path} looks like a secret; remove it and declare required-secrets")
            files.append(path)
            total += path.stat().st_size
    if len(files) > MAX_FILES or total > MAX_BYTES:
        raise SystemExit(f"error: {len(files)} files / {total} bytes; at most {MAX_FILES} files and {MAX_BYTES} bytes")
    return name, sorted(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("skill_dir")
    parser.add_argument("--output", default=".", help="folder for NAME.skill")
    args = parser.parse_args(argv)
    skill_dir = Path(args.skill_dir).resolve()
    if not skill_dir.is_dir():
        print(f"error: {skill_dir} is not a folder", file=sys.stderr)
        return 1
    name, files = validate(skill_dir)
    out = Path(args.output) / f"{name}.skill"
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, f"{name}/{path.relative_to(skill_dir).as_posix()}")
    print(f"packaged {len(files)} file(s) into {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
