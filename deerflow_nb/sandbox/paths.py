"""Translation between the sandbox's virtual paths and host folders.

A :class:`PathMapping` is a list of :class:`Mount` s (virtual prefix -> host folder,
read-only or not). Resolving a virtual path refuses anything that leaves the mounts:
``..`` past a root, a symlink whose target lies outside every mounted folder, or an
absolute path that is not under a virtual root. Providers that run host processes
(``local``) also rewrite virtual prefixes inside command strings and map host paths in
the output back to virtual ones.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from deerflow_nb.config.paths import USER_DATA_DIRS, VIRTUAL_USER_DATA
from deerflow_nb.errors import SandboxPathError

__all__ = [
    "VIRTUAL_SKILLS",
    "VIRTUAL_WORKSPACE",
    "Mount",
    "PathMapping",
    "thread_mounts",
]

VIRTUAL_SKILLS = "/mnt/skills"
VIRTUAL_WORKSPACE = f"{VIRTUAL_USER_DATA}/workspace"


@dataclass(frozen=True)
class Mount:
    """One virtual prefix backed by a host folder."""

    virtual: str
    host: Path
    read_only: bool = False


def thread_mounts(user_data_dir: Path, *, extra: Iterable[Mount] = ()) -> list[Mount]:
    """The user-data mounts of a thread, plus ``extra`` (e.g. the skills mounts).

    ``/mnt/user-data`` itself is read-only: only its ``workspace``, ``uploads`` and
    ``outputs`` folders are writable.
    """
    mounts = [Mount(VIRTUAL_USER_DATA, user_data_dir, read_only=True)]
    mounts += [Mount(f"{VIRTUAL_USER_DATA}/{name}", user_data_dir / name) for name in USER_DATA_DIRS]
    mounts.extend(extra)
    return mounts


@functools.lru_cache(maxsize=64)
def _virtual_pattern(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    """The virtual prefixes as one pattern (every thread with the same mounts shares it)."""
    alternatives = "|".join(re.escape(prefix) for prefix in prefixes)
    # A prefix counts only at a path boundary: not /mnt/user-data2, not x/mnt/skills.
    return re.compile(rf"(?<![\w./-])({alternatives})(?![\w.-])")


def _ends_at_boundary(text: str, end: int) -> bool:
    """Whether a path ending at ``end`` is not followed by a word character, ``.`` or ``-``."""
    if end >= len(text):
        return True
    char = text[end]
    return not (char.isalnum() or char in "_.-")


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class PathMapping:
    """Resolves virtual paths to host paths (and back) for one sandbox."""

    def __init__(self, mounts: Iterable[Mount]) -> None:
        mounts = list(mounts)
        if not mounts:
            raise ValueError("a PathMapping needs at least one mount")
        for mount in mounts:
            if not mount.virtual.startswith("/") or posixpath.normpath(mount.virtual) != mount.virtual:
                raise ValueError(f"mount prefix must be a normalised absolute path, got {mount.virtual!r}")
        # Longest prefix first, so /mnt/user-data/outputs wins over /mnt/user-data.
        self.mounts: tuple[Mount, ...] = tuple(sorted(mounts, key=lambda m: len(m.virtual), reverse=True))
        real = [os.path.realpath(m.host) for m in self.mounts]  # once each: it stats every component
        self._real_roots: tuple[tuple[str, Mount], ...] = tuple(
            sorted(zip(real, self.mounts, strict=True), key=lambda item: len(item[0]), reverse=True)
        )
        self._virtual_re = _virtual_pattern(tuple(m.virtual for m in self.mounts))
        host_forms: dict[str, str] = {}
        for mount, real_host in zip(self.mounts, real, strict=True):
            for form in (str(mount.host), real_host):
                host_forms.setdefault(form.rstrip("/") or "/", mount.virtual)
        self._host_to_virtual = host_forms
        # Longest first. Matched with str.find, not a regex: the host folders hold the thread
        # id, so a compiled pattern would be new for every thread (compiling cost ~1 ms).
        self._host_forms: tuple[str, ...] = tuple(sorted(host_forms, key=len, reverse=True))

    @property
    def roots(self) -> list[str]:
        """The virtual prefixes, shortest first."""
        return sorted((m.virtual for m in self.mounts), key=len)

    def _roots_hint(self) -> str:
        roots = self.roots
        top = [r for r in roots if not any(r != o and _is_within(r, o) for o in roots)]
        return " or ".join(top)

    def normalize(self, path: str) -> str:
        """Normalise a virtual path; relative paths are taken from the workspace."""
        if not isinstance(path, str) or not path.strip():
            raise SandboxPathError(f"expected a path under {self._roots_hint()}, got {path!r}")
        if "\0" in path:
            raise SandboxPathError(f"path {path!r} contains a NUL byte")
        raw = path.strip()
        if not raw.startswith("/"):
            raw = f"{VIRTUAL_WORKSPACE}/{raw}"
        return posixpath.normpath(raw)

    def mount_for(self, virtual_path: str) -> Mount | None:
        """The mount containing a normalised virtual path, or ``None``."""
        for mount in self.mounts:
            if _is_within(virtual_path, mount.virtual):
                return mount
        return None

    def to_host(self, path: str, *, write: bool = False) -> Path:
        """Resolve a virtual path to its real host path.

        Raises:
            SandboxPathError: the path escapes the mounts (``..``, a symlink pointing
                outside every mounted folder, an absolute non-virtual path) or, with
                ``write=True``, lies in a read-only mount.
        """
        virtual = self.normalize(path)
        mount = self.mount_for(virtual)
        if mount is None:
            raise SandboxPathError(
                f"path {path!r} is outside the sandbox; use paths under {self._roots_hint()}"
            )
        rel = virtual[len(mount.virtual) :].lstrip("/")
        candidate = mount.host / rel if rel else mount.host
        real = os.path.realpath(candidate)
        owner = self._real_mount(real)
        if owner is None:
            raise SandboxPathError(f"path {path!r} resolves (through a symlink) outside the sandbox")
        if write and (mount.read_only or owner.read_only):
            where = owner.virtual if owner.read_only else mount.virtual
            raise SandboxPathError(
                f"cannot write {virtual!r}: {where} is read-only; write under "
                f"{VIRTUAL_USER_DATA}/workspace, {VIRTUAL_USER_DATA}/uploads or {VIRTUAL_USER_DATA}/outputs"
            )
        return Path(real)

    def _real_mount(self, real: str) -> Mount | None:
        for root, mount in self._real_roots:
            if _is_within(real, root):
                return mount
        return None

    def is_inside(self, host_path: str | os.PathLike[str]) -> bool:
        """Whether a host path (after resolving symlinks) lies in a mounted folder."""
        return self._real_mount(os.path.realpath(host_path)) is not None

    def to_virtual(self, host_path: str | os.PathLike[str]) -> str:
        """Map a host path under a mount back to its virtual path.

        Raises:
            SandboxPathError: the host path is not under any mount.
        """
        text = str(host_path)
        for form in (text, os.path.realpath(text)):
            for root in sorted(self._host_to_virtual, key=len, reverse=True):
                if _is_within(form, root):
                    rest = form[len(root) :].lstrip("/")
                    base = self._host_to_virtual[root]
                    return f"{base}/{rest}" if rest else base
        raise SandboxPathError(f"host path {text!r} is not inside the sandbox")

    def translate_command(self, command: str) -> str:
        """Rewrite virtual prefixes in a shell command to host paths (local provider).

        Host folders whose path holds spaces or shell metacharacters are not quoted;
        keep ``DEER_FLOW_HOME`` free of them when using the local provider.
        """
        by_prefix = {m.virtual: str(m.host) for m in self.mounts}
        return self._virtual_re.sub(lambda match: by_prefix[match.group(1)], command)

    def untranslate_output(self, text: str) -> str:
        """Rewrite host folder paths in command output back to virtual paths."""
        if not text or not any(form in text for form in self._host_forms):
            return text
        pieces: list[str] = []
        start = 0
        while True:
            found = self._next_host_path(text, start)
            if found is None:
                pieces.append(text[start:])
                return "".join(pieces)
            index, form = found
            pieces += [text[start:index], self._host_to_virtual[form]]
            start = index + len(form)

    def _next_host_path(self, text: str, start: int) -> tuple[int, str] | None:
        """The leftmost host folder at or after ``start`` that ends at a path boundary (longest wins a tie)."""
        best: tuple[int, str] | None = None
        for form in self._host_forms:
            index = text.find(form, start)
            while index != -1 and not _ends_at_boundary(text, index + len(form)):
                index = text.find(form, index + 1)
            if index != -1 and (best is None or index < best[0]):
                best = (index, form)
        return best
