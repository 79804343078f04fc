"""Server discovery and message decoding for ``DeerFlow.connect()``; the deprecated ``Remote*`` names.

``DeerFlow.connect()`` returns a :class:`~deerflow_nb.DeerFlow` over an HTTP backend.
Inside a kernel it finds its own server: under JupyterHub from ``JUPYTERHUB_SERVICE_URL``
+ ``JUPYTERHUB_API_TOKEN``, otherwise from the running-server files Jupyter writes (the
server whose process started this kernel). ``RemoteDeerFlow``, ``RemoteThread`` and
``RemoteRun`` still import and work, with a ``DeprecationWarning``: ``RemoteDeerFlow(url, token)``
is ``DeerFlow.connect(url, token)``, ``RemoteThread(client, thread_id)`` is ``client.thread(thread_id)``
and ``RemoteRun(client, thread_id, run_id)`` is ``client.thread(thread_id).run(run_id)``.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from deerflow_nb.errors import UsageError

__all__ = ["discover_server", "message_from_dict"]


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


@functools.cache
def _remote_deerflow() -> type:
    from deerflow_nb.client.facade import DeerFlow
    from deerflow_nb.client.http import HttpBackend

    class RemoteDeerFlow(DeerFlow):
        """Deprecated: ``DeerFlow.connect(url, token)`` returns the same object."""

        def __init__(self, url: str | None = None, token: str | None = None, *, transport: Any = None) -> None:
            super().__init__(backend=HttpBackend(*discover_server(url, token), transport=transport))

    return RemoteDeerFlow


def _remote_thread(client: Any, thread_id: str | None = None) -> Any:
    """Deprecated ``RemoteThread(client, thread_id)``: ``client.thread(thread_id)``."""
    return client.thread(thread_id)


def _remote_run(client: Any, thread_id: str, run_id: str) -> Any:
    """Deprecated ``RemoteRun(client, thread_id, run_id)``: ``client.thread(thread_id).run(run_id)``."""
    return client.thread(thread_id).run(run_id)


def __getattr__(name: str) -> Any:
    if name in {"RemoteDeerFlow", "RemoteThread", "RemoteRun"}:
        new = {"RemoteDeerFlow": "DeerFlow.connect()", "RemoteThread": "Thread", "RemoteRun": "Run"}[name]
        warnings.warn(f"deerflow_nb.client.remote.{name} is deprecated: use {new} (one API in both modes)",
                      DeprecationWarning, stacklevel=2)
        if name == "RemoteDeerFlow":
            return _remote_deerflow()
        return _remote_thread if name == "RemoteThread" else _remote_run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
