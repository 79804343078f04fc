"""Read a thread's files by their sandbox path (``/mnt/user-data/...``) for the user."""

from __future__ import annotations

import mimetypes
import posixpath
from pathlib import Path

from deerflow_nb.config.paths import VIRTUAL_USER_DATA, Paths
from deerflow_nb.errors import NotFoundError, SandboxPathError, UsageError
from deerflow_nb.sandbox.search import is_staging_name

__all__ = ["guess_mime_type", "read_artifact", "resolve_artifact"]

#: Types ``mimetypes`` leaves out or gets wrong on some systems.
_MIME_OVERRIDES = {
    ".md": "text/markdown", ".markdown": "text/markdown", ".csv": "text/csv", ".json": "application/json",
    ".py": "text/x-python", ".ipynb": "application/x-ipynb+json", ".yaml": "application/yaml",
    ".yml": "application/yaml", ".txt": "text/plain", ".log": "text/plain", ".svg": "image/svg+xml",
    ".parquet": "application/vnd.apache.parquet",
}


def guess_mime_type(path: str | Path) -> str:
    """The MIME type of a file name (``application/octet-stream`` when unknown)."""
    suffix = Path(path).suffix.lower()
    if suffix in _MIME_OVERRIDES:
        return _MIME_OVERRIDES[suffix]
    return mimetypes.guess_type(str(path))[0] or "application/octet-stream"


def resolve_artifact(paths: Paths, user_id: str, thread_id: str, virtual_path: str) -> Path:
    """The host file behind ``virtual_path`` inside this thread's user-data folder.

    Raises:
        UsageError: the path is not under ``/mnt/user-data/``.
        SandboxPathError: it escapes the thread's folder (``..``, symlinks).
        NotFoundError: no such file.
    """
    if not isinstance(virtual_path, str) or not virtual_path.startswith(VIRTUAL_USER_DATA + "/"):
        raise UsageError(f"artifact path must start with {VIRTUAL_USER_DATA}/, got {virtual_path!r}")
    relative = virtual_path[len(VIRTUAL_USER_DATA) + 1:]
    if "\\" in relative or "\0" in relative or ".." in relative.split("/"):
        raise SandboxPathError(f"artifact path {virtual_path!r} escapes the thread's user-data folder")
    root = paths.user_data_dir(user_id, thread_id).resolve()
    target = (root / posixpath.normpath(relative)).resolve()
    if not target.is_relative_to(root):  # a symlink pointing out of the thread
        raise SandboxPathError(f"artifact path {virtual_path!r} escapes the thread's user-data folder")
    if not target.is_file() or is_staging_name(target.name):
        raise NotFoundError(f"artifact {virtual_path!r} not found in this thread")
    return target


def read_artifact(paths: Paths, user_id: str, thread_id: str, virtual_path: str) -> tuple[bytes, str]:
    """``(content, mime_type)`` of a thread file (blocking)."""
    target = resolve_artifact(paths, user_id, thread_id, virtual_path)
    return target.read_bytes(), guess_mime_type(target)
