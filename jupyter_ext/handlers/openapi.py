"""``GET /openapi.json``: an OpenAPI 3.1 description generated from the route table.

Paths come from the handlers' URL patterns, operations from their HTTP methods
(summary = the method's docstring), request bodies from the pydantic models in
:data:`BODIES`, so the document cannot drift from the routes.
"""

from __future__ import annotations

import re
from typing import Any

from jupyter_server.auth.decorator import authorized
from pydantic import BaseModel
from tornado import web

from jupyter_ext import schemas
from jupyter_ext.handlers.base import API, DeerFlowHandler, api_method

__all__ = ["BODIES", "build_openapi"]

_METHODS = ("get", "post", "put", "patch", "delete")
#: Request body model of each (handler class name, method).
BODIES: dict[tuple[str, str], type[BaseModel]] = {
    ("AssistantSearchHandler", "post"): schemas.AssistantSearchRequest,
    ("ThreadsHandler", "post"): schemas.ThreadCreateRequest,
    ("ThreadSearchHandler", "post"): schemas.ThreadSearchRequest,
    ("ThreadHandler", "patch"): schemas.ThreadPatchRequest,
    ("ThreadHistoryHandler", "post"): schemas.HistoryRequest,
    ("ThreadRunsHandler", "post"): schemas.RunCreateRequest,
    ("ThreadRunStreamHandler", "post"): schemas.RunCreateRequest,
    ("ThreadRunWaitHandler", "post"): schemas.RunCreateRequest,
    ("StatelessRunHandler", "post"): schemas.RunCreateRequest,
    ("FeedbackHandler", "post"): schemas.FeedbackRequest,
}
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")
_ERROR = {"description": "Error", "content": {"application/json": {"schema": {
    "type": "object", "properties": {"message": {"type": "string"}, "reason": {"type": ["string", "null"]}}}}}}


def _path(pattern: str) -> str:
    path = _GROUP.sub(lambda m: "{" + m.group(1) + "}", pattern)
    path = path.replace("(?P<mode>stream|wait)", "{mode}")
    return path.split(f"/{API}", 1)[1] or "/"


def build_openapi(handlers: list[tuple[str, type]]) -> dict[str, Any]:
    """The OpenAPI document of ``handlers`` (a ``default_handlers``-style table)."""
    paths: dict[str, dict[str, Any]] = {}
    components: dict[str, Any] = {}
    for pattern, cls in handlers:
        path = _path(pattern)
        params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                  for n in re.findall(r"\{(\w+)\}", path)]
        for method in _METHODS:
            func = cls.__dict__.get(method) or next(
                (c.__dict__[method] for c in cls.__mro__ if method in c.__dict__ and c is not web.RequestHandler
                 and issubclass(c, DeerFlowHandler)), None)
            if func is None:
                continue
            doc = (func.__doc__ or cls.__doc__ or "").strip().splitlines()[0]
            operation: dict[str, Any] = {"summary": doc, "operationId": f"{cls.__name__}.{method}.{path}",
                                         "parameters": params,
                                         "responses": {"200": {"description": "OK"}, "default": _ERROR}}
            model = BODIES.get((cls.__name__, method))
            if model is not None:
                components[model.__name__] = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(components[model.__name__].pop("$defs", {}))
                operation["requestBody"] = {"required": True, "content": {"application/json": {
                    "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}
            paths.setdefault(path, {})[method] = operation
    return {"openapi": "3.1.0",
            "info": {"title": "DeerFlow gateway (Jupyter server extension)", "version": "1"},
            "servers": [{"url": f"/{API}"}],
            "components": {"schemas": components,
                           "securitySchemes": {"jupyterToken": {"type": "apiKey", "in": "header",
                                                                "name": "Authorization"}}},
            "security": [{"jupyterToken": []}],
            "paths": paths}


class OpenApiHandler(DeerFlowHandler):
    """``GET /openapi.json``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self) -> None:
        """The OpenAPI document of this API."""
        from jupyter_ext.handlers import default_handlers

        self.write_json(build_openapi(default_handlers))
