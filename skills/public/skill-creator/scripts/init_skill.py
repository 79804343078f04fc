"""Scaffold a new skill folder: SKILL.md (with front matter), scripts/example.py and a README.

Usage: init_skill.py NAME --description TEXT [--path DIR] [--allowed-tools a,b] [--secret NAME]...
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

SKILL_TEMPLATE = """---
name: {name}
description: {description}
license: MIT
{extra}---

# {title}

Use this skill when ... (say which requests and inputs it is for).

## Steps

1. Check the inputs in `/mnt/user-data/uploads`.
2. Run the script:

   ```bash
   python3 /mnt/skills/custom/{name}/scripts/example.py --help
   ```

3. Save results in `/mnt/user-data/outputs` and present them.

## Rules

- ...
"""

SCRIPT_TEMPLATE = '''"""Example script of the {name} skill: replace with the real work."""

import argparse


def main() -> int:
    parser = argparse.ArgumentParser(description="{description}")
    parser.add_argument("--name", default="world")
    args = parser.parse_args()
    print(f"hello {{args.name}} from {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
'''


def scaffold(name: str, description: str, root: Path, allowed_tools: list[str], secrets: list[str]) -> Path:
    """Create ``root/name`` and return it; refuses an invalid name or an existing folder."""
    if not NAME_RE.match(name) or len(name) > 64:
        raise SystemExit(f"error: {name!r} is not a valid skill name (hyphen-case: a-z, 0-9, '-', max 64)")
    description = " ".join(description.split())
    if not description or "<" in description or ">" in description or len(description) > 1024:
        raise SystemExit("error: the description must be 1-1024 characters without angle brackets")
    target = root / name
    if target.exists():
        raise SystemExit(f"error: {target} already exists")
    extra = ""
    if allowed_tools:
        extra += "allowed-tools: " + ", ".join(allowed_tools) + "\n"
    if secrets:
        extra += "required-secrets:\n" + "".join(f"  - {s}\n" for s in secrets)
    (target / "scripts").mkdir(parents=True)
    title = name.replace("-", " ").capitalize()
    (target / "SKILL.md").write_text(SKILL_TEMPLATE.format(name=name, description=description, extra=extra,
                                                           title=title), encoding="utf-8")
    (target / "scripts" / "example.py").write_text(SCRIPT_TEMPLATE.format(name=name, description=description),
                                                   encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("--description", required=True)
    parser.add_argument("--path", default=".", help="folder to create the skill in")
    parser.add_argument("--allowed-tools", default="", help="comma-separated tool names")
    parser.add_argument("--secret", action="append", default=[], help="a required secret (env var name)")
    args = parser.parse_args(argv)
    tools = [t.strip() for t in args.allowed_tools.split(",") if t.strip()]
    for secret in args.secret:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", secret):
            print(f"error: {secret!r} is not a valid environment variable name", file=sys.stderr)
            return 1
    target = scaffold(args.name, args.description, Path(args.path), tools, args.secret)
    print(f"created {target} (edit {target / 'SKILL.md'} next)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
