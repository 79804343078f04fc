"""Remote mode: the same ``Thread`` / ``Run`` API over HTTP, against the ``deerflow`` server extension.

``DeerFlow.connect()`` returns a :class:`RemoteDeerFlow`. Inside a kernel it finds its
own server: under JupyterHub from ``JUPYTERHUB_SERVICE_URL`` + ``JUPYTERHUB_API_TOKEN``,
otherwise from the running-server files Jupyter writes (the server whose process
started this kernel). Runs live in the server, so they outlive the kernel.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from deerflow_nb.agent.state import with_state_defaults
from deerflow_nb.client.loop import BackgroundLoop
from deerflow_nb.client.mixins.thread_ui import ThreadUiMixin
from deerflow_nb.client.run import failure_of
from deerflow_nb.config import validate_id
from deerflow_nb.errors import DeerFlowError, NotFoundError, ThreadBusyError, UsageError
from deerflow_nb.runtime.events import EVENT_TYPES, StreamEvent

__all__ = ["RemoteDeerFlow", "RemoteRun", "RemoteThread", "discover_server", "message_from_dict"]


def discover_server(url: str | None = None, token: str | None = None) -> tuple[str, str | None]:
    """``(api_url, token)``: explicit values, JupyterHub's environment, or the running-server files."""
    if url:
        return url.rstrip("/"), token if token is not None else os.environ.get("JUPYTER_TOKEN")
    service_url = os.environ.get("JUPYTERHUB_SERVICE_URL")
    if service_url:
        return service_url.rstrip("/") + "/deerflow/api", token or os.environ.get("JUPYTERHUB_API_TOKEN")
    try:
        from jupyter_server.serverapp import list_running_servers
    except ImportError:
        raise UsageError("DeerFlow.connect() without url= needs jupyter_server installed "
                         "(pip install 'deerflow-nb[server]')") from None
    servers = list(list_running_servers())
    mine = [s for s in servers if s.get("pid") == os.getppid()]
    chosen = mine or (servers if len(servers) == 1 else [])
    if not chosen:
        raise UsageError(f"found {len(servers)} running Jupyter servers and none started this process; "
                         "pass DeerFlow.connect(url=..., token=...)")
    info = chosen[0]
    base = info["url"].rstrip("/")
    return base + "/deerflow/api", token or info.get("token") or None


_TYPES: dict[str, type[BaseMessage]] = {"ai": AIMessage, "human": HumanMessage, "tool": ToolMessage,
                                        "system": SystemMessage}


def message_from_dict(data: Mapping[str, Any]) -> BaseMessage:
    """A LangChain message from the gateway's serialized form."""
    cls = _TYPES.get(str(data.get("type")), HumanMessage)
    kwargs: dict[str, Any] = {"content": data.get("content") or "", "id": data.get("id"),
                              "additional_kwargs": dict(data.get("additional_kwargs") or {})}
    if cls is AIMessage:
        kwargs["tool_calls"] = [{"id": c.get("id"), "name": c["name"], "args": c.get("args", {})}
                                for c in data.get("tool_calls") or []]
        if data.get("usage_metadata"):
            kwargs["usage_metadata"] = data["usage_metadata"]
    if cls is ToolMessage:
        kwargs.update(tool_call_id=data.get("tool_call_id") or "", name=data.get("name"),
                      status=data.get("status") or "success", artifact=data.get("artifact"))
    return cls(**kwargs)


class _Http:
    """An ``httpx.AsyncClient`` living on the client's private loop."""

    def __init__(self, url: str, token: str | None, transport: httpx.AsyncBaseTransport | None) -> None:
        headers = {"Authorization": f"token {token}"} if token else {}
        self.url = url
        self._client = httpx.AsyncClient(base_url=url, headers=headers, transport=transport,
                                         timeout=httpx.Timeout(30.0, read=None))

    async def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        response = await self._client.request(method, path, json=body,
                                              params={k: v for k, v in params.items() if v is not None})
        _raise_for(response)
        return response.json() if response.content else None

    async def sse(self, method: str, path: str, body: Any = None,
                  last_event_id: str | None = None) -> AsyncIterator[tuple[str, Any, str | None]]:
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        async with self._client.stream(method, path, json=body, headers=headers) as response:
            if response.status_code >= 400:
                await response.aread()
                _raise_for(response)
            event, data, event_id = "", "", None
            async for line in response.aiter_lines():
                if not line:
                    if event:
                        yield event, json.loads(data) if data else None, event_id
                    event, data, event_id = "", "", None
                elif line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data += line[5:].strip()
                elif line.startswith("id:"):
                    event_id = line[3:].strip()

    async def aclose(self) -> None:
        await self._client.aclose()


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        message = response.json().get("message") or response.text
    except ValueError:
        message = response.text
    if response.status_code == 404:
        raise NotFoundError(message)
    if response.status_code == 409:
        raise ThreadBusyError(message)
    if response.status_code in {400, 422}:
        raise UsageError(message)
    raise DeerFlowError(f"HTTP {response.status_code}: {message}")


class RemoteRun:
    """A run executing in the server: ``events()``, ``wait()``, ``cancel()`` as for embedded runs."""

    def __init__(self, client: RemoteDeerFlow, thread_id: str, run_id: str) -> None:
        self._client = client
        self.thread_id = thread_id
        self.run_id = run_id
        self._events: list[StreamEvent] = []
        self._last_id: str | None = None

    def __repr__(self) -> str:
        return f"<RemoteRun {self.run_id} thread={self.thread_id}>"

    @property
    def _path(self) -> str:
        return f"/threads/{self.thread_id}/runs/{self.run_id}"

    async def _info(self) -> dict[str, Any]:
        return await self._client._http.request("GET", self._path)  # type: ignore[no-any-return]

    @property
    def status(self) -> str:
        """The run's status, fetched from the server."""
        return str(self._client._loop.run(self._info(), method="RemoteRun.status")["status"])

    async def _subscribe(self, *, resume: bool) -> AsyncIterator[StreamEvent]:
        async for event, data, event_id in self._client._http.sse(
                "GET", f"{self._path}/stream", last_event_id=self._last_id if resume else None):
            if event_id:
                self._last_id = event_id
            if event in EVENT_TYPES:
                stream_event = StreamEvent(event, data)  # type: ignore[arg-type]
                self._events.append(stream_event)
                yield stream_event

    def events(self) -> Iterator[StreamEvent]:
        """Iterate the run's events (blocking), replaying what the server retains."""
        return self._client._loop.iterate(lambda: self._subscribe(resume=False), method="Run.events")

    def aevents(self) -> AsyncIterator[StreamEvent]:
        """Async twin of :meth:`events`."""
        return self._client._loop.aiterate(lambda: self._subscribe(resume=False))

    async def _await(self) -> str:
        if not any(e.type in {"end", "error"} for e in self._events):
            async for _ in self._subscribe(resume=bool(self._last_id)):
                pass
        return self._result()

    def _result(self) -> str:
        error = next((e for e in reversed(self._events) if e.type == "error"), None)
        end = next((e for e in reversed(self._events) if e.type == "end"), None)
        end_status = end.data.get("status", "success") if end is not None and isinstance(end.data, dict) else None
        if error is not None or end is None or end_status != "success":
            detail = error.data if error is not None else None
            status = end_status or (detail.get("status") if isinstance(detail, dict) else None) or "error"
            if status == "success":
                status = "error"
            stop_reason = end.data.get("stop_reason") if end is not None and isinstance(end.data, dict) else None
            if detail is None:
                detail = {"message": "the stream ended without an end event" if end is None else status}
            raise failure_of(self.run_id, status, stop_reason, detail)
        texts: dict[str, str] = {}
        for event in self._events:
            data = event.data
            if event.type == "messages-tuple" and data.get("type") == "ai" and data.get("content"):
                texts[data["id"]] = texts.pop(data["id"], "") + data["content"]
        return next(reversed(texts.values()), "")

    def wait(self) -> str:
        """Block until the run ends; the final answer text (``RunError`` if it failed)."""
        return self._client._loop.run(self._await(), method="Run.wait")

    async def await_result(self) -> str:
        """Async twin of :meth:`wait`."""
        return await self._client._loop.arun(self._await())

    def __await__(self) -> Any:
        return self.await_result().__await__()

    async def _cancel(self, action: str) -> str:
        try:
            reply = await self._client._http.request("POST", f"{self._path}/cancel", action=action, wait=1)
        except ThreadBusyError:
            return "not_cancellable"
        except NotFoundError:
            return "unknown"
        return str(reply["outcome"])

    def cancel(self, action: str = "interrupt") -> str:
        """Cancel: ``cancelled``, ``not_cancellable`` or ``unknown``."""
        return self._client._loop.run(self._cancel(action), method="Run.cancel")

    async def acancel(self, action: str = "interrupt") -> str:
        """Async twin of :meth:`cancel`."""
        return await self._client._loop.arun(self._cancel(action))

    @property
    def pending_input(self) -> dict[str, Any] | None:
        """The human-input request the run ended with (once its events were read)."""
        end = next((e for e in reversed(self._events) if e.type == "end"), None)
        return end.data.get("pending_input") if end else None

    @property
    def usage(self) -> dict[str, int] | None:
        """Token usage of the run (once its events were read)."""
        end = next((e for e in reversed(self._events) if e.type == "end"), None)
        return end.data.get("usage") if end else None


class RemoteDeerFlow:
    """The DeerFlow client in remote mode (see :meth:`deerflow_nb.DeerFlow.connect`)."""

    def __init__(self, url: str | None = None, token: str | None = None, *,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        api_url, api_token = discover_server(url, token)
        self.url = api_url
        self._loop = BackgroundLoop("deerflow-remote")
        self._http = _Http(api_url, api_token, transport)

    def __repr__(self) -> str:
        return f"<RemoteDeerFlow {self.url}>"

    def _run(self, coro: Any, method: str) -> Any:
        return self._loop.run(coro, method=method)

    def thread(self, thread_id: str | None = None) -> RemoteThread:
        """A new thread, or the existing ``thread_id`` (created if it does not exist)."""
        body = {"thread_id": validate_id(thread_id, "thread_id") if thread_id else None, "if_exists": "do_nothing"}
        data = self._run(self._http.request("POST", "/threads", body), "DeerFlow.thread")
        return RemoteThread(self, data["thread_id"])

    async def athread(self, thread_id: str | None = None) -> RemoteThread:
        """Async twin of :meth:`thread`."""
        body = {"thread_id": validate_id(thread_id, "thread_id") if thread_id else None, "if_exists": "do_nothing"}
        data = await self._loop.arun(self._http.request("POST", "/threads", body))
        return RemoteThread(self, data["thread_id"])

    def threads(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Your threads, most recently active first."""
        rows = self._run(self._http.request("POST", "/threads/search", {"limit": limit or 1000}), "DeerFlow.threads")
        return [{"thread_id": r["thread_id"], "title": r.get("title"), "created_at": r["created_at"],
                 "updated_at": r["updated_at"], "status": r["status"]} for r in rows]

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread's history."""
        self._run(self._http.request("DELETE", f"/threads/{thread_id}"), "DeerFlow.delete_thread")

    def list_models(self) -> dict[str, Any]:
        """``GET /models``."""
        return self._run(self._http.request("GET", "/models"), "DeerFlow.list_models")  # type: ignore[no-any-return]

    def get_model(self, name: str) -> dict[str, Any]:
        """``GET /models/{name}``."""
        return self._run(self._http.request("GET", f"/models/{name}"), "DeerFlow.get_model")  # type: ignore[no-any-return]

    def health(self) -> dict[str, Any]:
        """``GET /health`` (who the server thinks you are, its database)."""
        return self._run(self._http.request("GET", "/health"), "DeerFlow.health")  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close the HTTP connection pool and stop the private loop."""
        self._loop.stop(self._http.aclose)

    def __enter__(self) -> RemoteDeerFlow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RemoteThread(ThreadUiMixin):
    """A thread in the server: ``chat``/``stream``/``start``/``respond``/``state``/``messages``/``history``.

    ``ui()`` gives the same chat widget as an embedded thread; ``workspace_changes`` reads the
    server's run journal.
    """

    def __init__(self, client: RemoteDeerFlow, thread_id: str) -> None:
        self._client = client
        self.id = thread_id

    def __repr__(self) -> str:
        return f"<RemoteThread {self.id}>"

    @property
    def _loop(self) -> BackgroundLoop:
        return self._client._loop

    # -- runs ----------------------------------------------------------------------
    @staticmethod
    def _body(message: str | HumanMessage, options: Mapping[str, Any],
              secrets: Mapping[str, str] | None) -> dict[str, Any]:
        if isinstance(message, str):
            if not message.strip():
                raise UsageError("message must not be empty")
            payload: dict[str, Any] = {"role": "user", "content": message}
        else:
            payload = {"type": "human", "content": message.content,
                       "additional_kwargs": dict(message.additional_kwargs)}
        unknown = set(options) - {"model_name", "thinking_enabled", "plan_mode", "subagent_enabled",
                                  "recursion_limit", "non_interactive"}
        if unknown:
            raise UsageError(f"unknown run option(s): {', '.join(sorted(unknown))}")
        context = {k: v for k, v in options.items() if k != "recursion_limit" and v is not None}
        body: dict[str, Any] = {"assistant_id": "lead_agent", "input": {"messages": [payload]},
                                "context": context, "stream_mode": ["values", "messages-tuple", "custom"]}
        if options.get("recursion_limit"):
            body["config"] = {"recursion_limit": options["recursion_limit"]}
        if secrets:
            body["secrets"] = dict(secrets)
        return body

    async def _astart(self, message: str | HumanMessage, options: Mapping[str, Any],
                      secrets: Mapping[str, str] | None) -> RemoteRun:
        data = await self._client._http.request("POST", f"/threads/{self.id}/runs",
                                                self._body(message, options, secrets))
        return RemoteRun(self._client, self.id, data["run_id"])

    def start(self, message: str, *, secrets: Mapping[str, str] | None = None, **options: Any) -> RemoteRun:
        """Start a run in the server and return its :class:`RemoteRun` at once."""
        return self._loop.run(self._astart(message, options, secrets), method="Thread.start")

    async def astart(self, message: str, *, secrets: Mapping[str, str] | None = None,
                     **options: Any) -> RemoteRun:
        """Async twin of :meth:`start`."""
        return await self._loop.arun(self._astart(message, options, secrets))

    async def _stream(self, message: str | HumanMessage, options: Mapping[str, Any],
                      secrets: Mapping[str, str] | None, sink: list[StreamEvent]) -> AsyncIterator[StreamEvent]:
        async for event, data, _ in self._client._http.sse("POST", f"/threads/{self.id}/runs/stream",
                                                           self._body(message, options, secrets)):
            if event in EVENT_TYPES:
                stream_event = StreamEvent(event, data)  # type: ignore[arg-type]
                sink.append(stream_event)
                yield stream_event

    def stream(self, message: str, *, secrets: Mapping[str, str] | None = None,
               **options: Any) -> Iterator[StreamEvent]:
        """Run and yield :class:`StreamEvent` s as they happen (SSE)."""
        return self._loop.iterate(lambda: self._stream(message, options, secrets, []), method="Thread.stream")

    async def astream(self, message: str, *, secrets: Mapping[str, str] | None = None,
                      **options: Any) -> AsyncIterator[StreamEvent]:
        """Async twin of :meth:`stream`."""
        async for event in self._loop.aiterate(lambda: self._stream(message, options, secrets, [])):
            yield event

    async def _achat(self, message: str | HumanMessage, responses: Any, options: Mapping[str, Any],
                     secrets: Mapping[str, str] | None) -> str:
        from deerflow_nb.client.thread import MAX_HEADLESS_ROUNDS, build_response_message, headless_answer
        from deerflow_nb.errors import HumanInputRequired

        for _ in range(MAX_HEADLESS_ROUNDS):
            run = RemoteRun(self._client, self.id, "")
            async for _event in self._stream(message, options, secrets, run._events):
                pass
            text = run._result()
            request = run.pending_input
            if request is None:
                return text
            answer = headless_answer(request, responses) if responses is not None else None
            if answer is None:
                raise HumanInputRequired(request, thread_id=self.id)
            message = build_response_message(request, answer)
        raise UsageError(f"gave up after {MAX_HEADLESS_ROUNDS} rounds of human-input requests")

    def chat(self, message: str, *, responses: Any = None, secrets: Mapping[str, str] | None = None,
             **options: Any) -> str:
        """Send ``message``, wait, return the final answer text (``responses`` answers human input)."""
        return self._loop.run(self._achat(message, responses, options, secrets), method="Thread.chat")

    async def achat(self, message: str, *, responses: Any = None, secrets: Mapping[str, str] | None = None,
                    **options: Any) -> str:
        """Async twin of :meth:`chat`."""
        return await self._loop.arun(self._achat(message, responses, options, secrets))

    async def _arespond(self, answer: Any, responses: Any, options: Mapping[str, Any]) -> str:
        from deerflow_nb.client.thread import build_response_message
        from deerflow_nb.runtime.streaming import pending_input_of

        state = await self._aget_state()
        request = pending_input_of(list(state.get("messages", [])))
        if request is None:
            raise UsageError(f"thread {self.id!r} has no pending human-input request")
        return await self._achat(build_response_message(request, answer), responses, options, None)

    def respond(self, answer: Any, *, responses: Any = None, **options: Any) -> str:
        """Answer the pending human-input request and continue; returns the answer text."""
        return self._loop.run(self._arespond(answer, responses, options), method="Thread.respond")

    async def arespond(self, answer: Any, *, responses: Any = None, **options: Any) -> str:
        """Async twin of :meth:`respond`."""
        return await self._loop.arun(self._arespond(answer, responses, options))

    # -- state ---------------------------------------------------------------------
    async def _aget_state(self) -> dict[str, Any]:
        data = await self._client._http.request("GET", f"/threads/{self.id}/state")
        values = dict(data.get("values") or {})
        if "messages" in values:
            values["messages"] = [message_from_dict(m) for m in values["messages"]]
        return with_state_defaults(values)

    @property
    def state(self) -> dict[str, Any]:
        """Current state values (messages as LangChain messages)."""
        return self._loop.run(self._aget_state(), method="Thread.state")

    async def aget_state(self) -> dict[str, Any]:
        """Async twin of :attr:`state`."""
        return await self._loop.arun(self._aget_state())

    @property
    def messages(self) -> list[BaseMessage]:
        """The thread's messages."""
        return list(self.state.get("messages", []))

    @property
    def title(self) -> str | None:
        """The generated title."""
        return self.state.get("title")

    @property
    def pending_input(self) -> dict[str, Any] | None:
        """The open human-input request, or ``None``."""
        from deerflow_nb.runtime.streaming import pending_input_of

        return pending_input_of(list(self.state.get("messages", [])))

    async def _ahistory(self, limit: int | None) -> list[dict[str, Any]]:
        items = await self._client._http.request("POST", f"/threads/{self.id}/history",
                                                 {"limit": 1000 if limit is None else limit})
        return [{"checkpoint_id": (i.get("checkpoint") or {}).get("checkpoint_id"),
                 "parent_checkpoint_id": (i.get("parent_checkpoint") or {}).get("checkpoint_id"),
                 "created_at": i.get("created_at"), "step": (i.get("metadata") or {}).get("step"),
                 "values": i.get("values", {})} for i in items]

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Checkpoints, newest first."""
        return self._loop.run(self._ahistory(limit), method="Thread.history")

    async def ahistory(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Async twin of :meth:`history`."""
        return await self._loop.arun(self._ahistory(limit))

    def workspace_changes(self, run_id: str | None = None) -> dict[str, Any]:
        """The ``workspace_changes`` payload of a run (default: the latest one)."""
        path = f"/threads/{self.id}/runs/{run_id}/workspace-changes" if run_id else \
            f"/threads/{self.id}/workspace-changes"
        return self._loop.run(self._client._http.request("GET", path),  # type: ignore[no-any-return]
                              method="Thread.workspace_changes")

    def run_events(self, run_id: str) -> list[dict[str, Any]]:
        """The run journal of one run."""
        data = self._loop.run(self._client._http.request("GET", f"/threads/{self.id}/runs/{run_id}/events"),
                              method="Thread.run_events")
        return list(data["data"])
