"""LangGraph-compatible runs: create, stream, wait, join, cancel, list, get; stateless runs."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from jupyter_server.auth.decorator import authorized
from langchain_core.messages import HumanMessage, convert_to_messages
from tornado import web

from deerflow_nb.config import validate_id
from deerflow_nb.runtime import CancelOutcome, RunRecord, normalize_stream_modes
from deerflow_nb.runtime.serialize import serialize_state
from jupyter_ext.handlers.base import API, DeerFlowHandler, api_method, http_error
from jupyter_ext.handlers.follow import stream_stored_run
from jupyter_ext.handlers.shapes import run_json
from jupyter_ext.handlers.sse import stream_run
from jupyter_ext.schemas import RunCreateRequest

__all__ = ["default_handlers"]


class _RunHandler(DeerFlowHandler):
    """Shared run admission and completion."""

    _on_close: Any = None

    def on_connection_close(self) -> None:
        """Cancel a ``/wait`` run when its client disconnects and asked for it."""
        if self._on_close is not None:
            self._on_close()
        super().on_connection_close()

    async def _check_thread(self, thread_id: str) -> None:
        """404 unless the requesting user has the thread."""
        store = await self.service.call(self.service.engine.store())
        await self.service.call(store.threads.get(thread_id, self.user_id))

    def _stream_modes(self) -> list[str] | None:
        """``?stream_mode=`` (repeatable) normalised; ``None`` for none given."""
        modes_arg = [m for m in self.get_query_arguments("stream_mode") if m]  # the SDK sends "" for none
        return normalize_stream_modes(modes_arg) if modes_arg else None

    async def _start(self, thread_id: str, body: RunCreateRequest) -> RunRecord:
        if body.assistant_id not in {"lead_agent", "agent"}:  # LangGraph answers an unknown assistant with 422
            raise http_error(422, f"assistant_id: assistant {body.assistant_id!r} not found",
                             "Unprocessable Entity")
        engine = self.service.engine
        if body.if_not_exists == "reject":
            await self._check_thread(thread_id)
        try:
            message = convert_to_messages(body.input.messages)[0]
        except (ValueError, NotImplementedError, KeyError) as exc:
            raise http_error(422, f"input.messages[0]: {exc}", "Unprocessable Entity") from None
        if not isinstance(message, HumanMessage):
            raise http_error(422, "input.messages[0] must be a human/user message", "Unprocessable Entity")
        options = engine.defaults.merged(**body.options())
        start = engine.start_run(
            thread_id, message, options, body.secrets, user_id=self.user_id, stream_updates=body.wants("updates"),
            stream_subgraphs=bool(body.stream_subgraphs), multitask_strategy=body.multitask_strategy,
            metadata=body.metadata, assistant_id="lead_agent", checkpoint_id=body.start_checkpoint())
        return await self.service.call(start)

    async def _final_state(self, record: Any) -> dict[str, Any]:
        values = await self.service.call(self.service.engine.get_state(record.thread_id, self.user_id))
        out = serialize_state(values)
        if record.status != "success":
            out["__error__"] = record.error or {"message": f"run ended with status {record.status}"}
        return out

    async def _wait(self, record: RunRecord, on_disconnect: str) -> dict[str, Any]:
        if on_disconnect == "cancel":
            runs, service = self.service.engine.runs, self.service
            self._on_close = lambda: service.submit(runs.cancel(record.run_id))
        await self.service.call(record.wait())
        self._on_close = None
        return await self._final_state(record)

    def _cleanup_later(self, record: RunRecord) -> None:
        """Delete a stateless run's thread once the run is over."""
        engine = self.service.engine

        async def cleanup() -> None:
            await record.wait()
            store = await engine.store()
            await store.delete_thread(record.thread_id, record.user_id)

        self.service.submit(cleanup())


class ThreadRunsHandler(_RunHandler):
    """``POST /threads/{id}/runs`` (background) and ``GET`` (list)."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """Start a background run; returns the run."""
        body = self.parse(RunCreateRequest)
        record = await self._start(validate_id(thread_id, "thread_id"), body)
        self.set_header("Content-Location", f"/threads/{thread_id}/runs/{record.run_id}")
        self.write_json(run_json(record))

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str) -> None:
        """The thread's runs, newest first (``?limit``, ``?offset``, ``?status``)."""
        await self._check_thread(thread_id)
        limit = self.query_int("limit", 10, ge=1, le=1000)
        offset = self.query_int("offset", 0, ge=0, le=1_000_000)
        status = self.query_choice("status", None, ("pending", "running", "success", "error", "timeout",
                                                    "interrupted"))
        runs = await self.service.call(self.service.engine.runs.list_by_thread(
            thread_id, self.user_id, limit=limit, offset=offset, status=status))
        self.write_json([run_json(r) for r in runs])


class ThreadRunStreamHandler(_RunHandler):
    """``POST /threads/{id}/runs/stream``: create and stream (SSE)."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """Start a run and stream its events."""
        body = self.parse(RunCreateRequest)
        record = await self._start(validate_id(thread_id, "thread_id"), body)
        await stream_run(self, run_id=record.run_id, thread_id=thread_id,
                         modes=normalize_stream_modes(body.stream_mode), last_event_id=None,
                         on_disconnect=body.on_disconnect)


class ThreadRunWaitHandler(_RunHandler):
    """``POST /threads/{id}/runs/wait``: create and block until done; returns the final state."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """Start a run and return the thread's values when it ends."""
        body = self.parse(RunCreateRequest)
        record = await self._start(validate_id(thread_id, "thread_id"), body)
        self.set_header("Content-Location", f"/threads/{thread_id}/runs/{record.run_id}")
        self.write_json(await self._wait(record, body.on_disconnect))


class StatelessRunHandler(_RunHandler):
    """``POST /runs/stream`` and ``POST /runs/wait``: a run on a throwaway thread."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, mode: str) -> None:
        """Run on a new thread, deleted afterwards unless ``on_completion="keep"``."""
        body = self.parse(RunCreateRequest)
        if body.start_checkpoint() is not None:
            raise http_error(422, "checkpoint_id: a stateless run has no thread to run from", "Unprocessable Entity")
        thread_id = str(uuid.uuid4())
        try:
            record = await self._start(thread_id, body)
        except BaseException:  # a refused run leaves no thread behind
            store = await self.service.call(self.service.engine.store())
            with contextlib.suppress(Exception):
                await self.service.call(store.delete_thread(thread_id, self.user_id))
            raise
        delete = (body.on_completion or "delete") == "delete"
        if mode == "stream":
            if delete:
                self._cleanup_later(record)
            await stream_run(self, run_id=record.run_id, thread_id=record.thread_id, stateless=True,
                             modes=normalize_stream_modes(body.stream_mode), last_event_id=None,
                             on_disconnect=body.on_disconnect)
            return
        try:
            result = await self._wait(record, body.on_disconnect)
        finally:
            if delete:
                self._cleanup_later(record)
        self.write_json(result)


class _RunLookup(_RunHandler):
    """Routes under one run (no HTTP methods of its own: each route defines exactly the ones it serves)."""

    async def _run(self, thread_id: str, run_id: str) -> Any:
        info = await self.service.call(self.service.engine.runs.get(run_id, self.user_id))
        if info is None or info.thread_id != thread_id:
            raise http_error(404, f"run {run_id!r} not found", "Not Found")
        return info


class RunHandler(_RunLookup):
    """``GET`` / ``DELETE /threads/{id}/runs/{run_id}``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str, run_id: str) -> None:
        """The run, or 404 (also for another user's run)."""
        self.write_json(run_json(await self._run(thread_id, run_id)))


    @web.authenticated
    @authorized
    @api_method
    async def delete(self, thread_id: str, run_id: str) -> None:
        """Delete a finished run (its row and journal); 409 while it is active; 204."""
        info = await self._run(thread_id, run_id)
        if info.status in {"pending", "running"}:
            raise http_error(409, f"run {run_id!r} is still active; cancel it first", "Conflict")
        await self.service.call(self.service.engine.delete_run(run_id, self.user_id))
        self.set_status(204)
        self.finish()


class RunJoinHandler(_RunLookup):
    """``GET /threads/{id}/runs/{run_id}/join``: block until the run ends; the final state."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str, run_id: str) -> None:
        """Wait for the run, then return the thread's values."""
        info = await self._run(thread_id, run_id)
        if isinstance(info, RunRecord):
            await self.service.call(info.wait())
        elif info.status in {"pending", "running"}:  # executed by another server: its row is polled
            info = await self.service.call(self.service.engine.runs.wait_stored(run_id, self.user_id)) or info
        self.write_json(await self._final_state(info))


class RunJoinStreamHandler(_RunLookup):
    """``GET /threads/{id}/runs/{run_id}/stream``: (re)join the SSE stream, honouring ``Last-Event-ID``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str, run_id: str) -> None:
        """Stream from after ``Last-Event-ID`` (``-1``: from the start; without it: what the run emits next)."""
        info = await self._run(thread_id, run_id)
        modes = self._stream_modes()
        cancel = self.query_choice("cancel_on_disconnect", "false", ("true", "false", "1", "0")) in {"1", "true"}
        if not isinstance(info, RunRecord) and info.status in {"pending", "running"} \
                and not self.service.engine.bridge.has(run_id):  # executed by another server: its journal
            await stream_stored_run(self, run_id=run_id, thread_id=thread_id, modes=modes,
                                    last_event_id=self.request.headers.get("Last-Event-ID") or None,
                                    on_disconnect="cancel" if cancel else "continue")
            return
        await stream_run(self, run_id=run_id, thread_id=thread_id, modes=modes,
                         last_event_id=self.request.headers.get("Last-Event-ID") or None,
                         on_disconnect="cancel" if cancel else "continue", join=True)


class ThreadStreamHandler(_RunHandler):
    """``GET /threads/{id}/stream``: join the thread's active run (or end at once when it has none)."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str) -> None:
        """The active run's events from now on (``?stream_mode=``, ``Last-Event-ID``)."""
        await self._check_thread(thread_id)
        modes = self._stream_modes()
        active = self.service.engine.runs.active_run(thread_id)
        if active is None:  # a run that another server on this database executes: follow its journal
            running = await self.service.call(self.service.engine.runs.list_by_thread(
                thread_id, self.user_id, limit=1, status="running"))
            if running:
                await stream_stored_run(self, run_id=running[0].run_id, thread_id=thread_id, modes=modes,
                                        last_event_id=self.request.headers.get("Last-Event-ID") or None)
                return
        if active is None:
            self.set_header("Content-Type", "text/event-stream; charset=utf-8")
            self.set_header("Cache-Control", "no-store")
            await self.flush()  # headers now: APIHandler.finish would relabel the empty stream as JSON
            self.finish()
            return
        await stream_run(self, run_id=active.run_id, thread_id=thread_id, modes=modes,
                         last_event_id=self.request.headers.get("Last-Event-ID") or None)


class RunCancelHandler(_RunLookup):
    """``POST /threads/{id}/runs/{run_id}/cancel?action=interrupt|rollback&wait=0|1``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str, run_id: str) -> None:
        """Cancel; 202 (``cancelled``), 404 (``unknown``), 409 (finished or executed elsewhere)."""
        await self._run(thread_id, run_id)
        action = self.query_choice("action", "interrupt", ("interrupt", "rollback")) or "interrupt"
        outcome = await self.service.call(self.service.engine.runs.cancel(run_id, action=action,
                                                                          user_id=self.user_id))
        if outcome == CancelOutcome.UNKNOWN:
            raise http_error(404, f"run {run_id!r} not found", "Not Found")
        if outcome not in {CancelOutcome.CANCELLED, CancelOutcome.REQUESTED, CancelOutcome.TAKEN_OVER}:
            if outcome == CancelOutcome.NOT_ACTIVE_LOCALLY:
                self.set_header("Retry-After", "5")
            raise http_error(409, f"run {run_id!r} cannot be cancelled here: {outcome.value}", "Conflict")
        wait = self.query_choice("wait", "0", ("0", "1", "true", "false")) in {"1", "true"}
        # taken over: its owner was gone, so the run was recovered here (``error``, ``orphan_recovered``)
        status = "error" if outcome == CancelOutcome.TAKEN_OVER else "interrupted"
        if outcome == CancelOutcome.REQUESTED:  # another server executes it and cancels it at its next renewal
            if not wait:
                self.write_json({"run_id": run_id, "outcome": outcome.value, "status": "running"}, status=202)
                return
            done = await self.service.call(self.service.engine.runs.wait_stored(run_id, self.user_id))
            status = done.status if done is not None else "interrupted"
            if status != "interrupted":  # it ended another way before the owner saw the request
                raise http_error(409, f"run {run_id!r} ended with status {status} before it was cancelled",
                                 "Conflict")
            outcome = CancelOutcome.CANCELLED
        self.write_json({"run_id": run_id, "outcome": outcome.value, "status": status},
                        status=200 if wait else 202)


class RunEventsHandler(_RunLookup):
    """``GET /threads/{id}/runs/{run_id}/events`` and ``GET /threads/{id}/events``: the journal."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str, run_id: str | None = None) -> None:
        """``{"data": [entries]}`` of the run (or of every run of the thread), oldest first (``?event_type=``)."""
        if run_id is not None:
            await self._run(thread_id, run_id)
        entries = await self.service.call(self.service.engine.run_events(
            thread_id, run_id, user_id=self.user_id, event_type=self.get_query_argument("event_type", None)))
        self.write_json({"data": entries})


class WorkspaceChangesHandler(_RunHandler):
    """``GET /threads/{id}/runs/{run_id}/workspace-changes`` and ``GET /threads/{id}/workspace-changes``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str, run_id: str | None = None) -> None:
        """The run's (default: latest) ``workspace_changes`` payload; no changes gives an empty list."""
        if run_id is not None:
            await _RunLookup._run(self, thread_id, run_id)  # type: ignore[arg-type]
        self.write_json(await self.service.call(self.service.gateway.workspace_changes(self.user_id, thread_id,
                                                                                       run_id)))


_T, _R = r"(?P<thread_id>[^/]+)", r"(?P<run_id>[^/]+)"
default_handlers = [
    (rf"/{API}/threads/{_T}/runs", ThreadRunsHandler),
    (rf"/{API}/threads/{_T}/runs/stream", ThreadRunStreamHandler),
    (rf"/{API}/threads/{_T}/runs/wait", ThreadRunWaitHandler),
    (rf"/{API}/threads/{_T}/runs/{_R}", RunHandler),
    (rf"/{API}/threads/{_T}/runs/{_R}/join", RunJoinHandler),
    (rf"/{API}/threads/{_T}/runs/{_R}/stream", RunJoinStreamHandler),
    (rf"/{API}/threads/{_T}/runs/{_R}/cancel", RunCancelHandler),
    (rf"/{API}/threads/{_T}/runs/{_R}/events", RunEventsHandler),
    (rf"/{API}/threads/{_T}/events", RunEventsHandler),
    (rf"/{API}/threads/{_T}/runs/{_R}/workspace-changes", WorkspaceChangesHandler),
    (rf"/{API}/threads/{_T}/workspace-changes", WorkspaceChangesHandler),
    (rf"/{API}/threads/{_T}/stream", ThreadStreamHandler),
    (rf"/{API}/runs/(?P<mode>stream|wait)", StatelessRunHandler),
]

