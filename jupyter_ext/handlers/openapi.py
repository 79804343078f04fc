"""``GET /openapi.json``: an OpenAPI 3.1 description generated from the route table.

Paths come from the handlers' URL patterns, operations from their HTTP methods
(summary = the method's docstring), request bodies from the pydantic models in
:data:`BODIES` (file uploads: :data:`FILES`), query and header parameters from
:data:`PARAMETERS` (an empty query value means "not given"), responses from
:data:`RESPONSES` (event streams as their events), so the document cannot drift from the
routes; ``tests/server/test_fuzz.py`` holds the server to it. A handler that serves several
patterns but not every method on each is narrowed by :data:`SERVED` (e.g.
``PUT /skills/{name}`` exists, ``PUT /skills`` does not).
"""

from __future__ import annotations

import re
from typing import Any

from jupyter_server.auth.decorator import authorized
from pydantic import BaseModel
from tornado import web

from deerflow_nb.config.schema import MemoryConfig
from deerflow_nb.mcp.schemas import (
    McpConfigResponse,
    McpConfigUpdateRequest,
    McpReloadResponse,
    McpToolsResponse,
)
from deerflow_nb.memory import schemas as memory
from deerflow_nb.runtime import conversation
from deerflow_nb.runtime import schedule_schemas as sched
from deerflow_nb.runtime.stream_modes import PUBLIC_STREAM_MODES
from deerflow_nb.subagents.schemas import SubagentsResponse
from deerflow_nb.tracing.context import MAX_TRACE_ID_LENGTH, TRACE_ID_HEADER
from jupyter_ext import schemas
from jupyter_ext.handlers.base import API, DeerFlowHandler, api_method

__all__ = ["BODIES", "FILES", "PARAMETERS", "RESPONSES", "build_openapi"]

_METHODS = ("get", "post", "put", "patch", "delete")
#: Request body model of each (handler class name, method).
BODIES: dict[tuple[str, str], type[BaseModel]] = {
    ("AssistantSearchHandler", "post"): schemas.AssistantSearchRequest,
    ("ThreadsHandler", "post"): schemas.ThreadCreateRequest,
    ("ThreadSearchHandler", "post"): schemas.ThreadSearchRequest,
    ("ThreadHandler", "patch"): schemas.ThreadPatchRequest,
    ("ThreadHistoryHandler", "post"): schemas.HistoryRequest,
    ("ThreadStateHandler", "post"): schemas.ThreadStateUpdateRequest,
    ("ThreadStateCheckpointHandler", "post"): schemas.ThreadStateCheckpointRequest,
    ("ThreadCompactHandler", "post"): schemas.ThreadCompactRequest,
    ("ThreadRunsHandler", "post"): schemas.RunCreateRequest,
    ("ThreadRunStreamHandler", "post"): schemas.RunCreateRequest,
    ("ThreadRunWaitHandler", "post"): schemas.RunCreateRequest,
    ("StatelessRunHandler", "post"): schemas.RunCreateRequest,
    ("FeedbackHandler", "post"): schemas.FeedbackRequest,
    ("GoalHandler", "put"): schemas.GoalSetRequest,
    ("RegeneratePrepareHandler", "post"): schemas.RegenerateRequest,
    ("EditRegeneratePrepareHandler", "post"): schemas.EditRegenerateRequest,
    ("BranchCheckoutHandler", "post"): schemas.BranchCheckoutRequest,
    ("ForkHandler", "post"): schemas.ForkRequest,
    ("MemoryImportHandler", "post"): schemas.MemoryImportRequest,
    ("MemoryFactsHandler", "post"): schemas.FactCreateRequest,
    ("MemoryFactHandler", "patch"): schemas.FactUpdateRequest,
    ("MemoryFactHandler", "delete"): schemas.FactDeleteRequest,
    ("MemorySummaryHandler", "put"): schemas.SummaryUpdateRequest,
    ("McpConfigHandler", "put"): McpConfigUpdateRequest,
    ("SkillsHandler", "put"): schemas.SkillUpdateRequest,
    ("ScheduledTasksHandler", "post"): schemas.ScheduledTaskCreateRequest,
}
_MEMORY_READS = ("config", "status", "data", "export", "section", "queue", "preview")
#: Methods actually served per path, where a handler's methods cover more paths than they serve;
#: templated paths served only for fixed values are listed with those values.
SERVED: dict[str, dict[str, tuple[str, ...]]] = {
    "/skills": {"/skills": ("get",)},
    "/memory": {"/memory": ("get", "delete")},
    "/memory/{part}": {**{f"/memory/{part}": ("get",) for part in _MEMORY_READS},
                       "/memory/reload": ("post",), "/memory/flush": ("post",)},
    "/threads/{thread_id}/uploads": {"/threads/{thread_id}/uploads": ("post",)},
    "/threads/{thread_id}/uploads/{filename}": {"/threads/{thread_id}/uploads/list": ("get",),
                                                "/threads/{thread_id}/uploads/{filename}": ("delete",)},
    "/models": {"/models": ("get",)},
    "/models/{name}": {"/models/{name}": ("get",)},
    "/runs/{mode}": {"/runs/stream": ("post",), "/runs/wait": ("post",)},
}
_OBJ: dict[str, Any] = {"type": "object"}
_LIST: dict[str, Any] = {"type": "array", "items": {"type": "object"}}
_THREAD: dict[str, Any] = {"type": "object",
                           "required": ["thread_id", "created_at", "updated_at", "metadata", "status"],
                           "properties": {"thread_id": {"type": "string"}, "created_at": {"type": "string"},
                                          "updated_at": {"type": "string"}, "state_updated_at": {"type": "string"},
                                          "metadata": {"type": "object"}, "status": {"type": "string"},
                                          "config": {"type": "object"}, "values": {"type": ["object", "null"]}}}
_RUN: dict[str, Any] = {"type": "object", "required": ["run_id", "thread_id", "assistant_id", "status"],
                        "properties": {"run_id": {"type": "string"}, "thread_id": {"type": "string"},
                                       "assistant_id": {"type": "string"}, "status": {"type": "string"},
                                       "created_at": {"type": "string"}, "updated_at": {"type": "string"},
                                       "metadata": {"type": "object"}, "multitask_strategy": {"type": "string"}}}
_STATE: dict[str, Any] = {"type": "object", "required": ["values", "next", "checkpoint"],
                          "properties": {"values": {"type": "object"}, "next": {"type": "array"},
                                         "checkpoint": {"type": ["object", "null"]}}}
_CHECKPOINT: dict[str, Any] = {"type": "object", "required": ["thread_id", "checkpoint_ns", "checkpoint_id"],
                               "properties": {"thread_id": {"type": "string"}, "checkpoint_ns": {"type": "string"},
                                              "checkpoint_id": {"type": "string"}}}
#: ``POST /threads/{id}/state``: the new checkpoint (``configurable`` and ``checkpoint_id``: LangGraph's older names).
_STATE_UPDATE: dict[str, Any] = {"type": "object", "required": ["checkpoint", "configurable", "checkpoint_id"],
                                 "properties": {"checkpoint": _CHECKPOINT, "configurable": _CHECKPOINT,
                                                "checkpoint_id": {"type": "string"}}}
_EVALUATION: dict[str, Any] = {
    "type": ["object", "null"], "required": ["blocker", "evaluated_at"],
    "properties": {"blocker": {"type": "string"}, "reason": {"type": "string"}, "evidence": {"type": "string"},
                   "stand_down_reason": {"type": ["string", "null"]}, "run_id": {"type": ["string", "null"]},
                   "evaluated_at": {"type": "string"}}}
_GOAL: dict[str, Any] = {"type": "object", "required": ["goal"], "properties": {"goal": {
    "type": ["object", "null"], "required": ["objective", "max_continuations", "continuations", "created_at"],
    "properties": {"objective": {"type": "string"}, "max_continuations": {"type": "integer", "minimum": 0,
                                                                          "maximum": 8},
                   "continuations": {"type": "integer"}, "created_at": {"type": "string"},
                   "updated_at": {"type": "string"}, "last_evaluation": _EVALUATION}}}}
_SSE = "text/event-stream"
#: One server-sent event (OpenAPI 3.1 describes an event stream by its events): a LangGraph event name
#: (``messages`` for the ``messages-tuple`` mode), optionally namespaced ``name|subgraph``, with JSON data.
_EVENT_NAMES = ("metadata", "error", "gap", *("messages" if m == "messages-tuple" else m for m in PUBLIC_STREAM_MODES))
_EVENT: dict[str, Any] = {"type": "object", "required": ["event", "data"], "properties": {
    "event": {"type": "string", "pattern": f"^({'|'.join(_EVENT_NAMES)})(\\|.+)?$"},
    "data": {"type": "string", "contentMediaType": "application/json"}, "id": {"type": "string"}}}
#: Response of each (handler class name, method): a JSON schema, ``_SSE`` for event streams, ``None`` for 204.
RESPONSES: dict[tuple[str, ...], Any] = {
    ("AssistantSearchHandler", "post"): _LIST, ("AssistantHandler", "get"): _OBJ,
    ("ThreadsHandler", "post"): _THREAD, ("ThreadSearchHandler", "post"): {"type": "array", "items": _THREAD},
    ("ThreadHandler", "get"): _THREAD, ("ThreadHandler", "patch"): _THREAD, ("ThreadHandler", "delete"): None,
    ("ThreadStateHandler", "get"): _STATE, ("ThreadHistoryHandler", "post"): {"type": "array", "items": _STATE},
    ("ThreadStateHandler", "post"): _STATE_UPDATE, ("ThreadStateAtHandler", "get"): _STATE,
    ("ThreadStateCheckpointHandler", "post"): _STATE, ("ThreadCompactHandler", "post"): schemas.ThreadCompactResponse,
    ("ThreadHistoryHandler", "get"): {"type": "array", "items": _STATE},
    ("ThreadRunsHandler", "post"): _RUN, ("ThreadRunsHandler", "get"): {"type": "array", "items": _RUN},
    ("ThreadRunStreamHandler", "post"): _SSE, ("ThreadRunWaitHandler", "post"): _OBJ,
    ("StatelessRunHandler", "post", "/runs/stream"): _SSE, ("StatelessRunHandler", "post", "/runs/wait"): _OBJ,
    ("RunHandler", "get"): _RUN, ("RunHandler", "delete"): None,
    ("RunJoinHandler", "get"): _OBJ, ("RunJoinStreamHandler", "get"): _SSE, ("ThreadStreamHandler", "get"): _SSE,
    ("RunCancelHandler", "post"): _OBJ, ("UploadsHandler", "get"): _OBJ,
    ("ArtifactHandler", "get"): "application/octet-stream", ("FeedbackHandler", "get"): _LIST,
    ("GoalHandler", "get"): _GOAL, ("GoalHandler", "put"): _GOAL, ("GoalHandler", "delete"): _GOAL,
    ("RegeneratePrepareHandler", "post"): conversation.PreparedReplay,
    ("EditRegeneratePrepareHandler", "post"): conversation.PreparedReplay,
    ("BranchesHandler", "get"): conversation.BranchesResponse,
    ("BranchCheckoutHandler", "post"): conversation.BranchesResponse,
    ("ForkHandler", "post"): conversation.ForkResponse,
    # a pydantic model: its schema, under components; a path as third item: that path only
    ("MemoryHandler", "get", "/memory"): memory.MemoryResponse,
    ("MemoryHandler", "get", "/memory/config"): memory.MemoryConfigResponse,
    ("MemoryHandler", "get", "/memory/status"): memory.MemoryStatusResponse,
    ("MemoryHandler", "get", "/memory/data"): memory.MemoryDataResponse,
    ("MemoryHandler", "get", "/memory/export"): memory.MemoryExportResponse,
    ("MemoryHandler", "get", "/memory/section"): MemoryConfig,
    ("MemoryHandler", "get", "/memory/queue"): memory.MemoryQueueStatus,
    ("MemoryHandler", "get", "/memory/preview"): memory.MemoryPreviewResponse,
    ("MemoryHandler", "post", "/memory/reload"): memory.MemoryResponse,
    ("MemoryHandler", "post", "/memory/flush"): memory.MemoryFlushResponse,
    ("MemoryHandler", "delete"): memory.MemoryDataResponse,
    ("MemoryImportHandler", "post"): memory.MemoryDataResponse,
    ("MemoryFactsHandler", "get"): memory.FactListResponse, ("MemoryFactsHandler", "post"): memory.FactRecord,
    ("MemoryFactHandler", "patch"): memory.FactRecord, ("MemoryFactHandler", "delete"): memory.FactDeleteResponse,
    ("MemorySummaryHandler", "put"): memory.MemoryDataResponse,
    ("McpConfigHandler", "get"): McpConfigResponse, ("McpConfigHandler", "put"): McpConfigResponse,
    ("McpToolsHandler", "get"): McpToolsResponse, ("McpReloadHandler", "post"): McpReloadResponse,
    ("SubagentsHandler", "get"): SubagentsResponse,
    ("ScheduledTasksHandler", "get"): sched.ScheduledTaskListResponse,
    ("ScheduledTasksHandler", "post"): sched.ScheduledTaskResponse,
    ("ScheduledTaskHandler", "get"): sched.ScheduledTaskResponse,
    ("ScheduledTaskHandler", "delete"): sched.ScheduledTaskDeleteResponse,
    ("ScheduledTaskPauseHandler", "post"): sched.ScheduledTaskResponse,
    ("ScheduledTaskResumeHandler", "post"): sched.ScheduledTaskResponse,
    ("ScheduledTaskTriggerHandler", "post"): sched.ScheduledTaskRunResponse,
    ("ScheduledTaskRunsHandler", "get"): sched.ScheduledTaskRunListResponse,
}


def _param(name: str, schema: dict[str, Any], where: str = "query") -> dict[str, Any]:
    # an empty query value means "not given" (langgraph-sdk sends ``stream_mode=`` for none)
    if where == "query" and schema.get("type") != "string":
        schema = {"anyOf": [schema, {"const": ""}]} if schema.get("type") != "array" else \
            {**schema, "items": {"anyOf": [schema["items"], {"const": ""}]}}
    return {"name": name, "in": where, "required": False, "schema": schema}


_BINARY = {"type": "string", "format": "binary"}
#: Multipart request bodies (file uploads) of each (handler class name, method).
FILES: dict[tuple[str, str], dict[str, Any]] = {
    ("UploadsHandler", "post"): {"type": "object", "required": ["files"],
                                 "properties": {"files": {"type": "array", "items": _BINARY, "minItems": 1}}},
    ("SkillInstallHandler", "post"): {"type": "object", "required": ["file"], "properties": {"file": _BINARY}},
}
_MODES = {"type": "array", "items": {"enum": list(PUBLIC_STREAM_MODES)}}
_JOIN = [_param("stream_mode", _MODES), _param("Last-Event-ID", {"type": "string"}, "header")]
#: Query and header parameters of each (handler class name, method).
PARAMETERS: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("ThreadRunsHandler", "get"): [
        _param("limit", {"type": "integer", "minimum": 1, "maximum": 1000}),
        _param("offset", {"type": "integer", "minimum": 0, "maximum": 1_000_000}),
        _param("status", {"enum": ["pending", "running", "success", "error", "timeout", "interrupted"]})],
    ("ThreadHistoryHandler", "get"): [_param("limit", {"type": "integer", "minimum": 0, "maximum": 2**31,
                                                       "description": "Clamped to 100."}),
                                      _param("before", {"type": "string", "maxLength": 200})],
    ("RunJoinStreamHandler", "get"): [*_JOIN, _param("cancel_on_disconnect", {"enum": ["true", "false", "1", "0"]})],
    ("ThreadStreamHandler", "get"): _JOIN,
    ("ThreadStateHandler", "get"): [_param("subgraphs", {"enum": ["true", "false", "True", "False"]})],
    ("ThreadStateAtHandler", "get"): [_param("subgraphs", {"enum": ["true", "false", "True", "False"]})],
    ("RunCancelHandler", "post"): [_param("action", {"enum": ["interrupt", "rollback"]}),
                                   _param("wait", {"enum": ["0", "1", "true", "false"]})],
    ("RunEventsHandler", "get"): [_param("event_type", {"type": "string"})],
    ("UsageHandler", "get"): [_param("thread_id", {"type": "string"}), _param("since", {"type": "number"})],
    ("ArtifactHandler", "get"): [_param("download", {"enum": ["true", "false"]})],
    ("MemoryFactsHandler", "get"): [_param("query", {"type": "string"}),  # with a query: a search
                                    _param("limit", {"type": "integer", "minimum": 1, "maximum": 1000})],
    ("MemoryHandler", "get"): [_param("message", {"type": "string"})],  # read by /memory/preview
    ("ScheduledTaskRunsHandler", "get"): [_param("limit", {"type": "integer", "minimum": 1, "maximum": 1000})],
}
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")
_ERROR = {"description": "Error", "content": {"application/json": {"schema": {
    "type": "object", "properties": {"message": {"type": "string"}, "reason": {"type": ["string", "null"]}}}}}}


def _path(pattern: str) -> str:
    path = _GROUP.sub(lambda m: "{" + m.group(1) + "}", pattern)
    path = path.replace("(?P<mode>stream|wait)", "{mode}")
    return path.split(f"/{API}", 1)[1] or "/"


#: ``X-Trace-Id``: optional on every request (checked as :func:`~deerflow_nb.tracing.validate_trace_id`
#: does), echoed (or a new one) on every response.
_TRACE_ID_SCHEMA = {"type": "string", "pattern": f"^[A-Za-z0-9._:-]{{1,{MAX_TRACE_ID_LENGTH}}}$"}
_TRACE_ID = _param(TRACE_ID_HEADER, _TRACE_ID_SCHEMA, "header")
_TRACE_HEADERS = {TRACE_ID_HEADER: {"description": "this request's trace id (the one sent, else a new one)",
                                    "required": True, "schema": _TRACE_ID_SCHEMA}}


def _responses(cls: type, method: str, path: str, components: dict[str, Any]) -> dict[str, Any]:
    shape = RESPONSES.get((cls.__name__, method, path), RESPONSES.get((cls.__name__, method), _OBJ))
    if isinstance(shape, type) and issubclass(shape, BaseModel):
        shape = _component(components, shape)
    error = {**_ERROR, "headers": _TRACE_HEADERS}
    if shape is None:
        return {"204": {"description": "No Content", "headers": _TRACE_HEADERS}, "default": error}
    if isinstance(shape, str):
        schema = _EVENT if shape == _SSE else {"type": "string", "format": "binary"}
        content = {shape: {"schema": schema}}
    else:
        content = {"application/json": {"schema": shape}}
    return {"200": {"description": "OK", "headers": _TRACE_HEADERS, "content": content}, "default": error}


def _component(components: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """A ``$ref`` to ``model``'s schema, added (with its ``$defs``) to ``components``."""
    if model.__name__ not in components:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(schema.pop("$defs", {}))
        components[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def build_openapi(handlers: list[tuple[str, type]]) -> dict[str, Any]:
    """The OpenAPI document of ``handlers`` (a ``default_handlers``-style table)."""
    paths: dict[str, dict[str, Any]] = {}
    components: dict[str, Any] = {}
    for pattern, cls in handlers:
        for path, served in SERVED.get(_path(pattern), {_path(pattern): _METHODS}).items():
            _operations(paths, components, path, cls, served)
    return {"openapi": "3.1.0",
            "info": {"title": "DeerFlow gateway (Jupyter server extension)", "version": "1"},
            "servers": [{"url": f"/{API}"}],
            "components": {"schemas": components,
                           "securitySchemes": {"jupyterToken": {"type": "apiKey", "in": "header",
                                                                "name": "Authorization"}}},
            "security": [{"jupyterToken": []}],
            "paths": paths}


def _operations(paths: dict[str, dict[str, Any]], components: dict[str, Any], path: str, cls: type,
                served: tuple[str, ...]) -> None:
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
              for n in re.findall(r"\{(\w+)\}", path)]
    for method in served:
        func = cls.__dict__.get(method) or next(
            (c.__dict__[method] for c in cls.__mro__ if method in c.__dict__ and c is not web.RequestHandler
             and issubclass(c, DeerFlowHandler)), None)
        if func is None:
            continue
        doc = (func.__doc__ or cls.__doc__ or "").strip().splitlines()[0]
        operation: dict[str, Any] = {"summary": doc, "operationId": f"{cls.__name__}.{method}.{path}",
                                     "parameters": [*params, *PARAMETERS.get((cls.__name__, method), []), _TRACE_ID],
                                     "responses": _responses(cls, method, path, components)}
        model = BODIES.get((cls.__name__, method))
        if model is not None:
            operation["requestBody"] = {"required": True, "content": {"application/json": {
                "schema": _component(components, model)}}}
        if (cls.__name__, method) in FILES:
            operation["requestBody"] = {"required": True, "content": {"multipart/form-data": {
                "schema": FILES[cls.__name__, method]}}}
        paths.setdefault(path, {})[method] = operation


class OpenApiHandler(DeerFlowHandler):
    """``GET /openapi.json``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self) -> None:
        """The OpenAPI document of this API."""
        from jupyter_ext.handlers import default_handlers

        self.write_json(build_openapi(default_handlers))
