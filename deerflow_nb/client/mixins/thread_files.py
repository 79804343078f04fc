"""``thread.upload()``, ``uploads()``, ``delete_upload()``, ``artifact()`` and ``usage()``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deerflow_nb.uploads import UploadSource

__all__ = ["ThreadFilesMixin"]


class ThreadFilesMixin:
    """Files and usage surface of :class:`~deerflow_nb.Thread`.

    Uploads land in ``/mnt/user-data/uploads``; the agent is told about new ones on its
    next turn. PDF, Word, Excel and PowerPoint files also get a Markdown twin.
    """

    _client: Any
    _loop: Any
    id: str

    def upload(self, paths: UploadSource | Iterable[UploadSource]) -> dict[str, Any]:
        """Upload local files (a path or a list); all or nothing.

        Returns ``{"success", "files": [{"filename", "path", "size", "markdown_file", ...}], "message"}``.
        Repeated names in one call get ``_1``, ``_2`` suffixes; a directory or a missing
        path fails the whole call before anything is copied.
        """
        return self._loop.run(self._client._files_call(self.id, "upload", _as_list(paths)), method="Thread.upload")

    async def aupload(self, paths: UploadSource | Iterable[UploadSource]) -> dict[str, Any]:
        """Async twin of :meth:`upload`."""
        return await self._loop.arun(self._client._files_call(self.id, "upload", _as_list(paths)))

    def uploads(self) -> dict[str, Any]:
        """``{"files": [{"filename", "size", "path", "extension", "modified_at"}], "count": N}``."""
        return self._loop.run(self._client._files_call(self.id, "list"), method="Thread.uploads")

    async def auploads(self) -> dict[str, Any]:
        """Async twin of :meth:`uploads`."""
        return await self._loop.arun(self._client._files_call(self.id, "list"))

    def delete_upload(self, name: str) -> dict[str, Any]:
        """Delete an upload (and the Markdown converted from it)."""
        return self._loop.run(self._client._files_call(self.id, "delete", name), method="Thread.delete_upload")

    async def adelete_upload(self, name: str) -> dict[str, Any]:
        """Async twin of :meth:`delete_upload`."""
        return await self._loop.arun(self._client._files_call(self.id, "delete", name))

    def artifact(self, path: str) -> tuple[bytes, str]:
        """``(content, mime_type)`` of ``/mnt/user-data/...`` in this thread (escapes are refused)."""
        return self._loop.run(self._client._files_call(self.id, "artifact", path), method="Thread.artifact")

    async def aartifact(self, path: str) -> tuple[bytes, str]:
        """Async twin of :meth:`artifact`."""
        return await self._loop.arun(self._client._files_call(self.id, "artifact", path))

    def usage(self) -> dict[str, Any]:
        """Token usage and cost of this thread's runs, overall and per model."""
        return self._loop.run(self._client._ausage(self.id, None), method="Thread.usage")

    async def ausage(self) -> dict[str, Any]:
        """Async twin of :meth:`usage`."""
        return await self._loop.arun(self._client._ausage(self.id, None))


def _as_list(paths: Any) -> list[Any]:
    if isinstance(paths, str | tuple) or hasattr(paths, "__fspath__"):
        return [paths]
    return list(paths)
