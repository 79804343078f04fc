"""A thread's uploads folder: all-or-nothing uploads, listing, deletion.

Files are staged as ``.<name>.part`` next to their destination and renamed into place
only once every file of the request has been copied, so a failed request leaves
nothing behind and a half-copied file is never visible: staging names are hidden
from upload listings, the agent's upload note and the sandbox listing/search tools.
All methods block: the client calls them through ``asyncio.to_thread``.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from deerflow_nb.agent.middlewares.uploads import list_upload_entries
from deerflow_nb.config.paths import Paths
from deerflow_nb.errors import NotFoundError, UsageError
from deerflow_nb.sandbox.search import is_staging_name
from deerflow_nb.uploads.convert import convert_to_markdown, is_convertible
from deerflow_nb.uploads.schemas import (
    DeleteUploadResponse,
    UploadedFile,
    UploadInfo,
    UploadListResponse,
    UploadResponse,
)
from deerflow_nb.utils.files import atomic_write_text

__all__ = ["UPLOADS_VIRTUAL", "UploadSource", "ThreadUploads", "check_filename", "unique_names"]

logger = logging.getLogger(__name__)
UPLOADS_VIRTUAL = "/mnt/user-data/uploads"
#: A local file path, or ``(filename, content)`` for bytes received over HTTP.
UploadSource = str | os.PathLike[str] | tuple[str, bytes]


def check_filename(name: str) -> str:
    """A safe stored name: no folders, not hidden (leading dots are dropped), not empty.

    Hidden names are reserved for staging files, which every listing skips.
    """
    if not isinstance(name, str) or "/" in name or "\\" in name or "\0" in name:
        raise UsageError(f"invalid upload name {name!r}: use a plain file name without folders")
    stored = name.strip().lstrip(".")
    if not stored or stored in {".", ".."}:
        raise UsageError(f"invalid upload name {name!r}")
    return stored


def unique_names(names: Iterable[str]) -> list[str]:
    """Give repeated names ``_1``, ``_2``, ... suffixes (before the extension), in order."""
    used: set[str] = set()
    out: list[str] = []
    for name in names:
        stem, suffix = os.path.splitext(name)
        candidate, n = name, 0
        while candidate in used:
            n += 1
            candidate = f"{stem}_{n}{suffix}"
        used.add(candidate)
        out.append(candidate)
    return out


def _source_name(source: UploadSource) -> str:
    if isinstance(source, tuple):
        return source[0]
    return Path(source).name


def check_upload_sources(sources: list[UploadSource]) -> None:
    """Refuse what cannot be uploaded, before anything is sent or copied (both modes check with this)."""
    if not sources:
        raise UsageError("nothing to upload: pass one or more file paths")
    for source in sources:
        if isinstance(source, tuple):
            if len(source) != 2 or not isinstance(source[1], bytes | bytearray):
                raise UsageError(f"an in-memory upload must be (filename, bytes), got {source!r:.80}")
            continue
        path = Path(source).expanduser()
        if path.is_dir():
            raise UsageError(f"cannot upload {str(path)!r}: it is a directory (upload its files instead)")
        if not path.is_file():
            raise NotFoundError(f"cannot upload {str(path)!r}: no such file")


class ThreadUploads:
    """The uploads folder of one (user, thread)."""

    def __init__(self, paths: Paths, user_id: str, thread_id: str) -> None:
        self.folder = paths.user_data_dir(user_id, thread_id) / "uploads"

    def _validate(self, sources: list[UploadSource]) -> None:
        check_upload_sources(sources)

    def upload(self, sources: Iterable[UploadSource], *, convert: bool = True) -> dict[str, object]:
        """Store every source or none; convert documents to Markdown; return ``UploadResponse``."""
        items: list[UploadSource] = [sources] if isinstance(sources, str | os.PathLike) else list(sources)
        self._validate(items)  # before anything is copied: all-or-nothing
        originals = [_source_name(s) for s in items]
        names = unique_names(check_filename(n) for n in originals)
        self.folder.mkdir(parents=True, exist_ok=True)
        staged: list[Path] = []
        try:
            for source, name in zip(items, names, strict=True):
                part = self.folder / f".{name}.{uuid.uuid4().hex[:8]}.part"
                staged.append(part)
                if isinstance(source, tuple):
                    part.write_bytes(bytes(source[1]))
                else:
                    shutil.copyfile(Path(source).expanduser(), part)
            # Renames within one folder do not fail in practice; the copies above are what can.
            for part, name in zip(staged, names, strict=True):
                os.replace(part, self.folder / name)
        except BaseException:
            for part in staged:
                part.unlink(missing_ok=True)
            raise
        files = [self._describe(name, original, names, convert) for name, original in zip(names, originals,
                                                                                            strict=True)]
        return UploadResponse(success=True, files=files,
                              message=f"uploaded {len(files)} file{'s' if len(files) != 1 else ''}").model_dump()

    def _describe(self, name: str, original: str, batch: list[str], convert: bool) -> UploadedFile:
        target = self.folder / name
        info = UploadedFile(filename=name, original_name=original, size=target.stat().st_size,
                            path=f"{UPLOADS_VIRTUAL}/{name}")
        if not (convert and is_convertible(name)):
            return info
        md_name = f"{Path(name).stem}.md"
        if md_name in batch:  # never overwrite another file of the same request
            md_name = f"{name}.md"
        try:
            atomic_write_text(self.folder / md_name, convert_to_markdown(target))
        except Exception as exc:  # the upload stands; only its Markdown twin is missing
            logger.warning("could not convert %s to Markdown: %s", name, exc)
            info.conversion_error = f"{type(exc).__name__}: {exc}"
            return info
        info.markdown_file, info.markdown_path = md_name, f"{UPLOADS_VIRTUAL}/{md_name}"
        return info

    def list(self) -> dict[str, object]:
        """``UploadListResponse``: the visible files, by name (the agent's upload note uses the same rule)."""
        files = []
        for entry in list_upload_entries(str(self.folder)):
            path = self.folder / entry["filename"]
            try:
                stat = path.stat()
            except FileNotFoundError:  # deleted while listing
                continue
            files.append(UploadInfo(filename=entry["filename"], size=stat.st_size, path=entry["path"],
                                    extension=path.suffix.lower(), modified_at=stat.st_mtime))
        return UploadListResponse(files=files, count=len(files)).model_dump()

    def delete(self, filename: str) -> dict[str, object]:
        """Delete one upload (and the Markdown generated from it); ``DeleteUploadResponse``."""
        if not isinstance(filename, str) or PurePosixPath(filename).name != filename or filename in {"", ".", ".."} \
                or "\\" in filename or is_staging_name(filename) or filename.startswith("."):
            raise UsageError(f"invalid upload name {filename!r}: give the plain file name of an upload")
        target = self.folder / filename
        if not target.is_file():
            raise NotFoundError(f"upload {filename!r} not found in this thread")
        target.unlink()
        deleted = [filename]
        if is_convertible(filename):
            twin = self.folder / f"{Path(filename).stem}.md"
            for candidate in (self.folder / f"{filename}.md", twin):
                if candidate.is_file():
                    candidate.unlink()
                    deleted.append(candidate.name)
                    break
        return DeleteUploadResponse(success=True, message=f"deleted {', '.join(deleted)}",
                                    deleted=deleted).model_dump()
