"""Tell the agent about files the user uploaded since its last turn."""

from __future__ import annotations

import os
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import HumanMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, context_of, run_blocking, with_update

__all__ = ["UploadsMiddleware", "list_upload_entries"]


def list_upload_entries(folder: str) -> list[dict[str, Any]]:
    """Visible files of an uploads folder (staging files start with ``.``)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    return [
        {"filename": e.name, "size": e.stat().st_size, "path": f"/mnt/user-data/uploads/{e.name}"}
        for e in entries
        if e.is_file() and not e.name.startswith(".")
    ]


def _note(files: list[dict[str, Any]]) -> str:
    lines = [f"- {f['path']} ({f['size']} bytes)" for f in files]
    return "<uploaded_files>\nThe user uploaded these files:\n" + "\n".join(lines) + "\n</uploaded_files>\n\n"


class UploadsMiddleware(ModelCallMiddleware):
    """Announces new uploads in the latest human message of the request.

    New files are recorded in ``uploaded_files`` with the id of the message that
    announced them, so every model call of that turn sees the same note.
    """

    def _scan(self, request: ModelRequest) -> list[dict[str, Any]]:
        ctx = context_of(request)
        if ctx.paths is None or not ctx.thread_id:
            return []
        folder = ctx.paths.user_data_dir(ctx.user_id, ctx.thread_id) / "uploads"
        entries = list_upload_entries(str(folder))
        ctx.extra["uploads_scan"] = entries
        return entries

    def _cached(self, request: ModelRequest) -> list[dict[str, Any]] | None:
        # Uploads arrive between turns, so one scan per run is enough.
        return context_of(request).extra.get("uploads_scan")

    def _apply(self, request: ModelRequest, current: list[dict[str, Any]]) -> tuple[ModelRequest, list | None]:
        known: list[dict[str, Any]] = list(request.state.get("uploaded_files") or [])  # type: ignore[call-overload]
        known_names = {f["filename"] for f in known}
        human = next((m for m in reversed(request.messages) if isinstance(m, HumanMessage)), None)
        new = [f for f in current if f["filename"] not in known_names]
        update = None
        if new and human is not None and human.id:
            new = [{**f, "message_id": human.id} for f in new]
            known += new
            update = known
        by_message: dict[str, list[dict[str, Any]]] = {}
        for f in known:
            by_message.setdefault(f.get("message_id", ""), []).append(f)
        if not by_message:
            return request, update
        messages = []
        for m in request.messages:
            files = by_message.get(m.id or "") if isinstance(m, HumanMessage) else None
            if files and isinstance(m.content, str):
                m = m.model_copy(update={"content": _note(files) + m.content})
            messages.append(m)
        return request.override(messages=messages), update

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> ModelCallResult:
        """Inject the note, call the model, record newly announced files."""
        scan = self._cached(request)
        request, update = self._apply(request, scan if scan is not None else self._scan(request))
        response: ModelResponse = handler(request)
        return with_update(response, {"uploaded_files": update} if update else None)

    async def awrap_model_call(self, request: ModelRequest, handler: Any) -> ModelCallResult:
        """Async twin: the folder scan runs in a thread."""
        scan = self._cached(request)
        if scan is None:
            scan = await run_blocking(self._scan, request)
        request, update = self._apply(request, scan)
        response: ModelResponse = await handler(request)
        return with_update(response, {"uploaded_files": update} if update else None)
