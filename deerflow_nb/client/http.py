"""``HttpBackend``: the :class:`~deerflow_nb.client.backend.Backend` over the ``deerflow`` server extension.

LangGraph-compatible routes (threads, state, history, runs, join streams, cancel) go
through the official ``langgraph-sdk`` client; DeerFlow's own routes (models, skills,
memory, MCP, uploads, artifacts, usage, journal, workspace changes) through ``httpx``.
Server-sent events are parsed by the SDK (``httpx-sse``), never by hand. Error answers
become the exception the server raised (:func:`deerflow_nb.errors.error_for`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from deerflow_nb.client.backend import RunOutcome
from deerflow_nb.errors import DeerFlowError, NotFoundError, ThreadBusyError, UsageError, error_for
from deerflow_nb.runtime.events import EVENT_TYPES, StreamEvent
from deerflow_nb.runtime.loop import BackgroundLoop

if TYPE_CHECKING:
    from langchain_core.messages import HumanMessage

    from deerflow_nb.skills.types import Skill
    from deerflow_nb.uploads import UploadSource
    from deerflow_nb.usage import Since

__all__ = ["HttpBackend", "raise_for", "stream_event_from_wire"]

_log = logging.getLogger(__name__)

#: What DeerFlow's client asks a stream for: LangGraph's modes plus DeerFlow's opt-in ``end`` and ``progress``.
CLIENT_STREAM_MODES = ["values", "messages-tuple", "updates", "custom", "end", "progress"]
#: What :meth:`HttpBackend.wait_run` folds: the answer's text and the outcome (``error`` frames always come). The
#: server then neither encodes nor sends the run's ``values`` states and custom events to a waiter.
_WAIT_STREAM_MODES = ["messages-tuple", "end"]
_CHUNK_ONLY = ("tool_call_chunks", "chunk_position")

#: DeerFlow routes without a thread: name -> (method, path, what the remaining arguments are).
#: ``{}`` in the path takes the first argument; then ``""``: nothing more, ``"*"``: the JSON body,
#: another string: the one field of the body, a tuple: query parameters in that order.
_ROUTES: dict[str, tuple[str, str, str | tuple[str, ...]]] = {
    "list_models": ("GET", "/models", ""), "get_model": ("GET", "/models/{}", ""),
    "list_skills": ("GET", "/skills", ""), "get_skill": ("GET", "/skills/{}", ""),
    "update_skill": ("PUT", "/skills/{}", "enabled"), "uninstall_skill": ("DELETE", "/skills/{}", ""),
    "get_memory": ("GET", "/memory", ""), "reload_memory": ("POST", "/memory/reload", ""),
    "get_memory_config": ("GET", "/memory/config", ""), "get_memory_status": ("GET", "/memory/status", ""),
    "memory_data": ("GET", "/memory/data", ""), "list_memory_facts": ("GET", "/memory/facts", ""),
    "search_memory_facts": ("GET", "/memory/facts", ("query", "limit")),
    "memory_preview": ("GET", "/memory/preview", ("message",)), "export_memory": ("GET", "/memory/export", ""),
    "import_memory": ("POST", "/memory/import", "*"), "memory_section": ("GET", "/memory/section", ""),
    "memory_queue_status": ("GET", "/memory/queue", ""), "add_memory_fact": ("POST", "/memory/facts", "*"),
    "update_memory_fact": ("PATCH", "/memory/facts/{}", "*"),
    "delete_memory_fact": ("DELETE", "/memory/facts/{}", "*"),
    "set_memory_summary": ("PUT", "/memory/summaries/{}", "*"), "clear_memory": ("DELETE", "/memory", ""),
    "flush_memory": ("POST", "/memory/flush", ""),
    "get_mcp_config": ("GET", "/mcp/config", ""), "update_mcp_config": ("PUT", "/mcp/config", "mcp_servers"),
    "list_mcp_tools": ("GET", "/mcp/tools", ""), "reload_mcp": ("POST", "/mcp/reload", ""),
    "list_subagents": ("GET", "/subagents", ""),
    "list_scheduled_tasks": ("GET", "/scheduled-tasks", ""),
    "create_scheduled_task": ("POST", "/scheduled-tasks", "*"),
    "get_scheduled_task": ("GET", "/scheduled-tasks/{}", ""),
    "pause_scheduled_task": ("POST", "/scheduled-tasks/{}/pause", ""),
    "resume_scheduled_task": ("POST", "/scheduled-tasks/{}/resume", ""),
    "delete_scheduled_task": ("DELETE", "/scheduled-tasks/{}", ""),
    "trigger_scheduled_task": ("POST", "/scheduled-tasks/{}/trigger", ""),
    "list_scheduled_task_runs": ("GET", "/scheduled-tasks/{}/runs", ("limit",)),
    "health": ("GET", "/health", ""),
}


def raise_for(response: httpx.Response) -> None:
    """Raise the DeerFlow exception of an error answer (``{"message", "reason", "error_type"}``)."""
    if response.status_code < 400:
        return
    try:
        body = response.json()
    except ValueError:
        body = {}
    message = (body.get("message") if isinstance(body, dict) else None) or response.text or response.reason_phrase
    raise error_for(response.status_code, str(message), body.get("error_type") if isinstance(body, dict) else None)


def _translated(exc: httpx.HTTPStatusError) -> DeerFlowError:
    try:
        raise_for(exc.response)
    except DeerFlowError as error:
        return error
    return DeerFlowError(str(exc))  # pragma: no cover - raise_for always raises for >= 400


def stream_event_from_wire(event: str, data: Any) -> StreamEvent | None:
    """The :class:`StreamEvent` of one SSE frame (``None`` for ``metadata``, ``gap`` and other control frames).

    ``messages`` frames (``[chunk, metadata]``) become ``messages-tuple`` events in DeerFlow's
    shape: an AI text delta ``{"type": "ai", "id", "content"}``, an AI tool-call message, or a
    tool result. A subgraph's frame (``values|tools:<task_id>``, streamed with ``stream_subgraphs``)
    becomes its mode's event with :attr:`~StreamEvent.namespace` set.
    """
    if "|" in event:
        mode, namespace = event.split("|", 1)
        inner = stream_event_from_wire(mode, data)
        return replace(inner, namespace=namespace) if inner is not None else None
    if event == "messages" and isinstance(data, list | tuple) and data and isinstance(data[0], dict):
        chunk = dict(data[0])
        meta = data[1] if len(data) > 1 and isinstance(data[1], dict) else None
        if chunk.get("type") in {"AIMessageChunk", "ai"}:
            if chunk.get("tool_calls"):
                message = {k: v for k, v in chunk.items() if k not in _CHUNK_ONLY}
                message["type"] = "ai"
                return StreamEvent("messages-tuple", message, meta)
            return StreamEvent("messages-tuple", {"type": "ai", "id": chunk.get("id"),
                                                  "content": chunk.get("content") or ""}, meta)
        return StreamEvent("messages-tuple", chunk, meta)
    if event in EVENT_TYPES and event != "messages-tuple":
        return StreamEvent(event, data)  # type: ignore[arg-type]
    return None


def message_payload(message: str | HumanMessage) -> dict[str, Any]:
    """The ``input.messages[0]`` of a run body."""
    if isinstance(message, str):
        if not message.strip():
            raise UsageError("message must not be empty")
        return {"role": "user", "content": message}
    return {"type": "human", "content": message.content, "additional_kwargs": dict(message.additional_kwargs)}


def _values(values: Any) -> dict[str, Any]:
    """State values from the wire, messages as LangChain messages."""
    from deerflow_nb.client.remote import message_from_dict

    out = dict(values or {})
    if "messages" in out:
        out["messages"] = [message_from_dict(m) for m in out["messages"]]
    return out


#: Checkpoints per ``/history`` call (the route's own cap).
_HISTORY_PAGE = 100


def _history_item(state: Mapping[str, Any]) -> dict[str, Any]:
    """A LangGraph ``ThreadState`` as the history item the in-process backend returns."""
    return {"checkpoint_id": (state.get("checkpoint") or {}).get("checkpoint_id"),
            "parent_checkpoint_id": (state.get("parent_checkpoint") or {}).get("checkpoint_id"),
            "created_at": state.get("created_at"), "step": (state.get("metadata") or {}).get("step"),
            "metadata": dict(state.get("metadata") or {}), "values": _values(state.get("values"))}


def _message_json(message: Any, serialize: Any) -> Any:
    """A message of a state update as JSON (LangChain messages in LangGraph's form; dicts as they are)."""
    from langchain_core.messages import BaseMessage

    if isinstance(message, BaseMessage):
        data = serialize(message)
        data.pop("hidden", None)
        return data
    return message


class HttpBackend:
    """Talks to ``{server}/deerflow/api`` with the Jupyter token (see :func:`discover_server`)."""

    defer_new_threads = False

    def __init__(self, url: str, token: str | None, *, transport: httpx.AsyncBaseTransport | None = None,
                 loop: BackgroundLoop | None = None) -> None:
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"token {token}"} if token else {}
        self._transport = transport
        self.loop = loop or BackgroundLoop("deerflow-remote")
        self.user_id = "?"
        self._http: httpx.AsyncClient | None = None
        self._sdk: Any = None

    def __repr__(self) -> str:
        return f"url={self.url!r}"

    # -- clients (created on the private loop that uses them) ---------------------------
    @property
    def http(self) -> httpx.AsyncClient:
        """The ``httpx`` client for DeerFlow's routes."""
        if self._http is None:
            # each live run holds a connection for its event stream: keep enough of them alive that
            # many concurrent runs reuse connections instead of reconnecting (httpx keeps 20)
            self._http = httpx.AsyncClient(base_url=self.url, headers=self._headers, transport=self._transport,
                                           timeout=httpx.Timeout(30.0, read=None),
                                           limits=httpx.Limits(max_connections=200, max_keepalive_connections=100))
        return self._http

    @property
    def sdk(self) -> Any:
        """The ``langgraph-sdk`` client for the LangGraph-compatible routes."""
        if self._sdk is None:
            from langgraph_sdk import get_client
            from langgraph_sdk.client import LangGraphClient

            if self._transport is None:
                self._sdk = get_client(url=self.url, api_key=None, headers=self._headers)
            else:  # tests inject a transport, as for httpx
                self._sdk = LangGraphClient(httpx.AsyncClient(base_url=self.url, headers=self._headers,
                                                              transport=self._transport))
        return self._sdk

    async def _call(self, coro: Any) -> Any:
        try:
            return await coro
        except httpx.HTTPStatusError as exc:
            raise _translated(exc) from None

    async def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """One DeerFlow route; its JSON body."""
        response = await self.http.request(method, path, json=body,
                                           params={k: v for k, v in params.items() if v is not None})
        raise_for(response)
        return response.json() if response.content else None

    # -- threads -------------------------------------------------------------------------
    async def create_thread(self, thread_id: str, *, new: bool) -> None:
        """``POST /threads`` (``if_exists=do_nothing``)."""
        await self._call(self.sdk.threads.create(thread_id=thread_id, if_exists="do_nothing"))

    async def list_threads(self, limit: int | None) -> list[dict[str, Any]]:
        """``POST /threads/search``."""
        rows = await self._call(self.sdk.threads.search(limit=limit or 1000))
        return [{"thread_id": r["thread_id"], "title": r.get("title"), "status": r["status"],
                 "created_at": r["created_at"], "updated_at": r["updated_at"]} for r in rows]

    async def delete_thread(self, thread_id: str) -> None:
        """``DELETE /threads/{id}``."""
        await self._call(self.sdk.threads.delete(thread_id))

    async def rename_thread(self, thread_id: str, title: str) -> None:
        """``PATCH /threads/{id}`` with ``metadata.title`` (the server sets the thread's title)."""
        if not str(title).strip():
            raise UsageError("a thread title must not be empty")
        await self._call(self.sdk.threads.update(thread_id, metadata={"title": str(title)}))

    async def compact_thread(self, thread_id: str, keep_messages: int | None) -> dict[str, Any]:
        """``POST /threads/{id}/compact``."""
        body = {} if keep_messages is None else {"keep_messages": keep_messages}
        return dict(await self.request("POST", f"/threads/{thread_id}/compact", body))

    async def active_run(self, thread_id: str) -> str | None:
        """``GET /threads/{id}/runs?limit=1``: the newest run, if it is still going (one active run a thread)."""
        runs = await self._call(self.sdk.runs.list(thread_id, limit=1))
        return str(runs[0]["run_id"]) if runs and runs[0]["status"] in {"pending", "running"} else None

    async def get_state(self, thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
        """``GET /threads/{id}/state[/{checkpoint_id}]``, messages as LangChain messages."""
        data = await self._call(self.sdk.threads.get_state(thread_id, checkpoint_id=checkpoint_id))
        return _values(data.get("values"))

    async def get_checkpoint(self, thread_id: str, checkpoint_id: str | None) -> dict[str, Any] | None:
        """``GET /threads/{id}/state[/{checkpoint_id}]`` as a history item."""
        data = await self._call(self.sdk.threads.get_state(thread_id, checkpoint_id=checkpoint_id))
        return _history_item(data) if data.get("checkpoint_id") else None

    async def update_state(self, thread_id: str, values: Mapping[str, Any] | None, as_node: str | None,
                           checkpoint_id: str | None) -> dict[str, Any]:
        """``POST /threads/{id}/state`` (LangChain messages sent in their JSON form)."""
        from deerflow_nb.runtime.serialize import serialize_message

        payload: Any = None
        if values is not None:
            if not isinstance(values, Mapping):
                raise UsageError(f"values: must be an object of state channels, got {type(values).__name__}")
            payload = dict(values)
            messages = payload.get("messages")
            if isinstance(messages, list):
                payload["messages"] = [_message_json(m, serialize_message) for m in messages]
        answer = await self._call(self.sdk.threads.update_state(thread_id, payload, as_node=as_node,
                                                                checkpoint_id=checkpoint_id))
        return dict(answer["checkpoint"])

    async def get_history(self, thread_id: str, limit: int | None) -> list[dict[str, Any]]:
        """``POST /threads/{id}/history``, messages as LangChain messages."""
        items: list[dict[str, Any]] = []
        before: str | None = None
        while limit is None or len(items) < limit:  # pages: the route returns at most 100 per call
            want = _HISTORY_PAGE if limit is None else min(_HISTORY_PAGE, limit - len(items))
            page = await self._call(self.sdk.threads.get_history(thread_id, limit=want, before=before))
            items.extend(_history_item(i) for i in page)
            if len(page) < want:
                break
            before = items[-1]["checkpoint_id"]
        return items

    # -- goals ---------------------------------------------------------------------------
    async def get_goal(self, thread_id: str) -> dict[str, Any]:
        """``GET /threads/{id}/goal``."""
        return dict(await self.request("GET", f"/threads/{thread_id}/goal"))

    async def set_goal(self, thread_id: str, objective: str, max_continuations: int) -> dict[str, Any]:
        """``PUT /threads/{id}/goal``."""
        body = {"objective": objective, "max_continuations": max_continuations}
        return dict(await self.request("PUT", f"/threads/{thread_id}/goal", body))

    async def clear_goal(self, thread_id: str) -> dict[str, Any]:
        """``DELETE /threads/{id}/goal``."""
        return dict(await self.request("DELETE", f"/threads/{thread_id}/goal"))

    # -- conversation control -----------------------------------------------------------
    async def prepare_regenerate(self, thread_id: str, run_id: str | None) -> dict[str, Any]:
        """``POST /threads/{id}/runs/regenerate/prepare``."""
        body = {"run_id": run_id} if run_id is not None else {}
        return dict(await self.request("POST", f"/threads/{thread_id}/runs/regenerate/prepare", body))

    async def prepare_edit(self, thread_id: str, message_id: str, content: str) -> dict[str, Any]:
        """``POST /threads/{id}/runs/edit-regenerate/prepare``."""
        return dict(await self.request("POST", f"/threads/{thread_id}/runs/edit-regenerate/prepare",
                                       {"message_id": message_id, "content": content}))

    async def branches(self, thread_id: str) -> dict[str, Any]:
        """``GET /threads/{id}/branches``."""
        return dict(await self.request("GET", f"/threads/{thread_id}/branches"))

    async def checkout(self, thread_id: str, branch_id: str) -> dict[str, Any]:
        """``POST /threads/{id}/branches/checkout``."""
        return dict(await self.request("POST", f"/threads/{thread_id}/branches/checkout", {"branch_id": branch_id}))

    async def fork(self, thread_id: str, checkpoint_id: str) -> dict[str, Any]:
        """``POST /threads/{id}/fork``."""
        return dict(await self.request("POST", f"/threads/{thread_id}/fork", {"checkpoint_id": checkpoint_id}))

    # -- runs ----------------------------------------------------------------------------
    async def start_run(self, thread_id: str, message: str | HumanMessage, options: Mapping[str, Any],
                        secrets: Mapping[str, str] | None, *, stream_tokens: bool,
                        checkpoint_id: str | None = None, metadata: Mapping[str, Any] | None = None) -> str:
        """``POST /threads/{id}/runs`` (secrets, a DeerFlow field, go in the body over ``httpx``)."""
        from deerflow_nb.runtime.engine import check_run_option_names

        check_run_option_names(options)
        context = {k: v for k, v in options.items() if k != "recursion_limit" and v is not None}
        config = {"recursion_limit": options["recursion_limit"]} if options.get("recursion_limit") else None
        payload = {"messages": [message_payload(message)]}
        modes = ["values", "messages-tuple", "custom"]  # the run's stream; joins add ``end`` and ``progress``
        if secrets:
            body: dict[str, Any] = {"assistant_id": "lead_agent", "input": payload, "context": context,
                                    "stream_mode": modes, "secrets": dict(secrets)}
            if config:
                body["config"] = config
            if checkpoint_id is not None:
                body["checkpoint_id"] = checkpoint_id
            if metadata is not None:
                body["metadata"] = dict(metadata)
            return str((await self.request("POST", f"/threads/{thread_id}/runs", body))["run_id"])
        run = await self._call(self.sdk.runs.create(thread_id, "lead_agent", input=payload, context=context,
                                                    config=config, stream_mode=modes, checkpoint_id=checkpoint_id,
                                                    metadata=dict(metadata) if metadata is not None else None))
        return str(run["run_id"])

    async def run_batches(self, thread_id: str, run_id: str, start: int) -> AsyncIterator[list[StreamEvent]]:
        """``GET /threads/{id}/runs/{run_id}/stream`` from the beginning; the first ``start`` events skipped.

        A ``gap`` frame (events the server no longer has) is logged as a warning: the events
        in it are lost to this stream, though the run's outcome is not (see :meth:`wait_run`).
        """
        async for batch in self._replay(thread_id, run_id, start, None):
            yield batch

    async def _replay(self, thread_id: str, run_id: str, start: int, gaps: list[dict[str, Any]] | None,
                      modes: list[str] = CLIENT_STREAM_MODES) -> AsyncIterator[list[StreamEvent]]:
        seen = 0  # Last-Event-ID -1: replay from the start (a join without it streams only what comes next)
        stream = self.sdk.runs.join_stream(thread_id, run_id, stream_mode=modes, last_event_id="-1")
        try:
            async for part in stream:
                if part.event == "gap":
                    gap = dict(part.data) if isinstance(part.data, dict) else {}
                    if gaps is not None:
                        gaps.append(gap)
                    else:
                        _log.warning("run %s: the server no longer has some of its events (after id %s, "
                                     "resumed at %s); the stream skips them", run_id,
                                     gap.get("last_event_id"), gap.get("resumed_at"))
                    continue
                event = stream_event_from_wire(part.event, part.data)
                if event is None:
                    continue  # metadata, heartbeats
                seen += 1
                if seen > start:
                    yield [event]
        except httpx.HTTPStatusError as exc:
            raise _translated(exc) from None

    async def wait_run(self, thread_id: str, run_id: str) -> RunOutcome:
        """Fold the run's stream (replayed from the start) into its outcome."""
        from deerflow_nb.runtime.streaming import final_text_of_run

        texts: dict[str, str] = {}
        end: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        gaps: list[dict[str, Any]] = []
        async for batch in self._replay(thread_id, run_id, 0, gaps, _WAIT_STREAM_MODES):
            for event in batch:
                data = event.data
                if event.type == "messages-tuple" and data.get("type") == "ai" and data.get("content"):
                    texts[data["id"]] = texts.pop(data["id"], "") + data["content"]
                elif event.type == "end":
                    end = dict(data or {})
                elif event.type == "error":
                    error = dict(data or {})
        if end is None:
            status = await self.run_status(thread_id, run_id)
            detail = error or {"message": "the stream ended without an end event"}
            return RunOutcome(run_id, status if status not in {"success", "unknown"} else "error", error=detail)
        status = str(end.get("status") or "success")
        if error is not None and status == "success":
            status = "error"
        text = next(reversed(texts.values()), "")
        if status == "success" and (gaps or not texts):  # deltas missing (finished long ago, or a gap): use the state
            text = final_text_of_run(list((await self.get_state(thread_id)).get("messages", [])), run_id)
        return RunOutcome(run_id, status, text, end.get("stop_reason"), error or end.get("error"), end)

    async def run_status(self, thread_id: str, run_id: str) -> str:
        """``GET /threads/{id}/runs/{run_id}``."""
        return str((await self._call(self.sdk.runs.get(thread_id, run_id)))["status"])

    async def cancel_run(self, thread_id: str, run_id: str, action: str) -> str:
        """``POST .../cancel``: 404 is ``unknown``, 409 ``not_cancellable``."""
        try:
            await self._call(self.sdk.runs.cancel(thread_id, run_id, wait=True, action=action))
        except ThreadBusyError:
            return "not_cancellable"
        except NotFoundError:
            return "unknown"
        return "cancelled"

    async def run_events(self, thread_id: str, run_id: str | None, event_type: str | None) -> list[dict[str, Any]]:
        """``GET /threads/{id}/runs/{run_id}/events`` (or ``/threads/{id}/events`` for every run)."""
        path = f"/threads/{thread_id}/events" if run_id is None else f"/threads/{thread_id}/runs/{run_id}/events"
        data = await self.request("GET", path, event_type=event_type)
        return list(data["data"])

    async def workspace_changes(self, thread_id: str, run_id: str | None) -> dict[str, Any]:
        """``GET /threads/{id}[/runs/{run_id}]/workspace-changes``."""
        path = f"/threads/{thread_id}/runs/{run_id}/workspace-changes" if run_id else \
            f"/threads/{thread_id}/workspace-changes"
        return dict(await self.request("GET", path))

    # -- files and usage -----------------------------------------------------------------
    async def upload(self, thread_id: str, files: list[UploadSource]) -> dict[str, Any]:
        """``POST /threads/{id}/uploads`` (multipart); local paths or ``(name, bytes)`` pairs."""
        from deerflow_nb.uploads.store import check_upload_sources

        def read() -> list[tuple[str, tuple[str, bytes]]]:
            check_upload_sources(files)  # refused as the embedded client refuses, before anything is sent
            parts = []
            for item in files:
                if isinstance(item, tuple):
                    name, content = item
                    parts.append(("files", (str(name), bytes(content))))
                    continue
                path = Path(os.fspath(item)).expanduser()
                parts.append(("files", (path.name, path.read_bytes())))
            return parts

        parts = await asyncio.to_thread(read)  # file reads stay off the client's loop
        response = await self.http.post(f"/threads/{thread_id}/uploads", files=parts)
        raise_for(response)
        return dict(response.json())

    async def list_uploads(self, thread_id: str) -> dict[str, Any]:
        """``GET /threads/{id}/uploads/list``."""
        return dict(await self.request("GET", f"/threads/{thread_id}/uploads/list"))

    async def delete_upload(self, thread_id: str, filename: str) -> dict[str, Any]:
        """``DELETE /threads/{id}/uploads/{name}``."""
        return dict(await self.request("DELETE", f"/threads/{thread_id}/uploads/{quote(filename, safe='')}"))

    async def artifact(self, thread_id: str, path: str) -> tuple[bytes, str]:
        """``GET /threads/{id}/artifacts/{path}``: the path sent as it is (one escaped segment); the server decides."""
        if not isinstance(path, str):
            raise UsageError(f"artifact path must be a string, got {type(path).__name__}")
        response = await self.http.get(f"/threads/{thread_id}/artifacts/{quote(path, safe='')}")
        raise_for(response)
        return response.content, response.headers.get("Content-Type", "application/octet-stream")

    async def usage(self, thread_id: str | None, since: Since) -> dict[str, Any]:
        """``GET /usage`` (``?thread_id``, ``?since``)."""
        from deerflow_nb.usage import parse_since

        start = parse_since(since)
        return dict(await self.request("GET", "/usage", thread_id=thread_id, since=start))

    # -- DeerFlow routes -----------------------------------------------------------------
    async def gateway(self, name: str, *args: Any) -> Any:
        """The route of ``name`` (see :data:`_ROUTES`)."""
        method, path, rest = _ROUTES[name]
        if "{}" in path:
            path, args = path.format(quote(str(args[0]), safe="")), args[1:]
        if isinstance(rest, tuple):
            return await self.request(method, path, None, **dict(zip(rest, args, strict=False)))
        body = None if not rest else args[0] if rest == "*" else {rest: args[0]}
        return await self.request(method, path, dict(body) if isinstance(body, Mapping) else body)

    async def install_skill(self, archive: str | os.PathLike[str]) -> dict[str, Any]:
        """``POST /skills/install`` (multipart ``file``)."""
        from deerflow_nb.skills.installer import archive_path

        path = await asyncio.to_thread(archive_path, archive)
        content = await asyncio.to_thread(path.read_bytes)
        response = await self.http.post("/skills/install", files=[("file", (path.name, content))])
        raise_for(response)
        return dict(response.json())

    async def skills(self) -> list[Skill]:
        """``GET /skills`` as :class:`~deerflow_nb.skills.types.Skill` objects (``path``: the sandbox path)."""
        from deerflow_nb.skills.schemas import skill_from_response

        data = await self.request("GET", "/skills")
        return [skill_from_response(item) for item in data["skills"]]

    def local(self, feature: str) -> Any:
        """Nothing is local over HTTP: Python objects and host paths stay on the server."""
        raise UsageError(f"this part of agent.{feature} is a Python object or host path of the process that runs "
                         "the agent: only an embedded DeerFlow() has it (see docs/api.md, 'What is genuinely local')")

    async def aclose(self) -> None:
        """Close the HTTP connection pools."""
        if self._http is not None:
            await self._http.aclose()
        if self._sdk is not None:
            with contextlib.suppress(Exception):
                await self._sdk.http.client.aclose()
