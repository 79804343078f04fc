"""Previews of presented files: images inline, CSV as a table, text as text, the rest as downloads.

Bytes come from ``thread.artifact(path)`` (``(bytes, mime)``) where the client has
it; otherwise, for the embedded client, from the thread's host folder. Everything
here is blocking and runs off the event loop (``asyncio.to_thread``).
"""

from __future__ import annotations

import base64
import csv
import io
import mimetypes
import posixpath
from pathlib import Path
from typing import Any

__all__ = ["MAX_INLINE_BYTES", "artifact_preview", "read_artifact"]

#: Files larger than this are listed with metadata only (no inline data, no download link).
MAX_INLINE_BYTES = 5 * 1024 * 1024
PREVIEW_ROWS = 20
PREVIEW_TEXT = 4000
_TEXT_MIMES = {"application/json", "application/xml", "application/x-yaml", "application/javascript"}
_VIRTUAL_ROOT = "/mnt/user-data/"


def _host_path(thread: Any, virtual: str) -> Path | None:
    """The host file behind ``/mnt/user-data/...`` for an embedded thread (``None`` when unknown)."""
    client = getattr(thread, "_client", None)
    engine = getattr(client, "_engine", None)
    paths = getattr(engine, "paths", None)
    if engine is None or paths is None or not virtual.startswith(_VIRTUAL_ROOT):
        return None
    base = Path(paths.user_data_dir(engine.user_id, thread.id)).resolve()
    target = (base / virtual[len(_VIRTUAL_ROOT):]).resolve()
    return target if target.is_relative_to(base) else None


def read_artifact(thread: Any, path: str) -> tuple[bytes, str]:
    """``(bytes, mime)`` of a presented file; raises ``OSError``/``LookupError`` when unreadable."""
    getter = getattr(thread, "artifact", None)
    if callable(getter):
        try:
            data, mime = getter(path)
            return bytes(data), str(mime or "application/octet-stream")
        except NotImplementedError:
            pass  # a client without file access yet: fall back to the host folder
    host = _host_path(thread, path)
    if host is None:
        raise FileNotFoundError(f"cannot read {path}: this client has no thread.artifact()")
    mime = mimetypes.guess_type(host.name)[0] or "application/octet-stream"
    return host.read_bytes(), mime


def _csv_rows(text: str) -> list[list[str]]:
    reader = csv.reader(io.StringIO(text))
    rows = []
    for row in reader:
        rows.append(row)
        if len(rows) > PREVIEW_ROWS:
            break
    return rows


def artifact_preview(path: str, data: bytes, mime: str) -> dict[str, Any]:
    """A JSON-ready preview: ``kind`` is ``image``, ``table``, ``text`` or ``file``."""
    name = posixpath.basename(path)
    mime = mime.split(";")[0].strip() or mimetypes.guess_type(name)[0] or "application/octet-stream"
    preview: dict[str, Any] = {"path": path, "name": name, "mime": mime, "size": len(data), "kind": "file"}
    if len(data) > MAX_INLINE_BYTES:
        preview["note"] = "too large to preview; fetch it with thread.artifact(path)"
        return preview
    preview["data_url"] = f"data:{mime};base64," + base64.b64encode(data).decode("ascii")
    if mime.startswith("image/"):
        preview["kind"] = "image"
        return preview
    is_text = mime.startswith("text/") or mime in _TEXT_MIMES or name.endswith((".md", ".csv", ".tsv"))
    if not is_text:
        return preview
    text = data.decode("utf-8", errors="replace")
    if name.endswith(".csv") or mime == "text/csv":
        rows = _csv_rows(text)
        preview.update(kind="table", rows=rows[:PREVIEW_ROWS], truncated=len(rows) > PREVIEW_ROWS)
    else:
        preview.update(kind="text", text=text[:PREVIEW_TEXT], truncated=len(text) > PREVIEW_TEXT,
                       markdown=name.endswith(".md"))
    return preview
