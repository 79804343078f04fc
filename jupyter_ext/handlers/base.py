"""Shared handler machinery: identity, JSON bodies and JSON errors ``{"message", "reason"}``."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from jupyter_server.auth import IdentityProvider
from jupyter_server.auth.identity import PasswordIdentityProvider
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from pydantic import BaseModel, ValidationError
from tornado import web

from deerflow_nb.config import validate_id
from deerflow_nb.errors import DeerFlowError, UsageError, status_for
from jupyter_ext.service import DeerFlowService

__all__ = ["API", "AUTH_RESOURCE", "DeerFlowHandler", "api_method", "dumps", "iso"]

API = "deerflow/api"
AUTH_RESOURCE = "deerflow"
M = TypeVar("M", bound=BaseModel)
H = TypeVar("H", bound="DeerFlowHandler")

try:  # orjson is a LangGraph dependency; it makes SSE encoding several times cheaper
    import orjson

    def dumps(value: Any) -> str:
        """Compact JSON (non-JSON leaves become strings)."""
        return orjson.dumps(value, default=str).decode()
except ImportError:  # pragma: no cover
    def dumps(value: Any) -> str:
        """Compact JSON (non-JSON leaves become strings)."""
        return json.dumps(value, default=str, separators=(",", ":"))


def iso(timestamp: float | None) -> str | None:
    """UNIX seconds as an ISO-8601 UTC string."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat() if timestamp is not None else None


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg']}")
    return "invalid request body: " + "; ".join(parts)


class DeerFlowHandler(ExtensionHandlerMixin, APIHandler):
    """Base of every DeerFlow route (Jupyter auth, the requesting user, the runtime)."""

    auth_resource = AUTH_RESOURCE

    @property
    def service(self) -> DeerFlowService:
        """The runtime bridge."""
        service = getattr(self.extensionapp, "service", None)
        if service is None:
            raise web.HTTPError(503, reason="deerflow is not running")
        return service

    @property
    def user_id(self) -> str:
        """The Jupyter user (the Hub user under JupyterHub); anonymous token users are ``default``."""
        user = self.current_user
        provider = self.identity_provider
        if type(provider) in {IdentityProvider, PasswordIdentityProvider} or user is None:
            return str(getattr(self.extensionapp, "anonymous_user_id", "default"))
        try:
            return validate_id(user.username, "user_id")
        except UsageError:
            raise web.HTTPError(403, reason=f"user name {user.username!r} cannot be a DeerFlow user_id") from None

    def parse(self, model: type[M]) -> M:
        """The JSON body as ``model`` (400 for bad JSON, 422 naming the offending fields)."""
        raw = self.request.body or b"{}"
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise web.HTTPError(400, reason="request body is not valid JSON") from None
        if data is None:
            data = {}
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise _HTTPError(422, _validation_message(exc), "Unprocessable Entity") from None

    def write_json(self, value: Any, status: int = 200) -> None:
        """Finish with a JSON body."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(dumps(value))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Errors are ``{"message", "reason"}`` JSON, never HTML."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "message", None) or getattr(exc, "log_message", None) or self._reason
        reason = getattr(exc, "reason", None) or self._reason
        body = {"message": message, "reason": reason}
        if getattr(exc, "error_type", None):
            body["error_type"] = exc.error_type  # type: ignore[union-attr]
        self.set_header("Content-Type", "application/json")
        self.finish(dumps(body))


_REASONS = {404: "Not Found", 403: "Forbidden", 409: "Conflict", 422: "Unprocessable Entity"}


class _HTTPError(web.HTTPError):
    """An HTTP error whose message may contain ``%`` (tornado would format it)."""

    def __init__(self, status: int, message: str, reason: str | None = None, error_type: str | None = None) -> None:
        super().__init__(status, reason=reason)
        self.message = message
        self.error_type = error_type


def http_error(status: int, message: str, reason: str | None = None, error_type: str | None = None) -> web.HTTPError:
    """An HTTP error carrying ``message`` verbatim (and the DeerFlow exception's class name)."""
    return _HTTPError(status, message, reason, error_type)


def api_method(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """Map DeerFlow errors to HTTP statuses through :data:`deerflow_nb.errors.HTTP_STATUSES`.

    Not found 404, path refusal 403, busy thread 409, misuse 422, anything else 500; the
    body names the exception class (``error_type``) so the HTTP client raises the same one.
    """

    @functools.wraps(method)
    async def wrapper(self: DeerFlowHandler, *args: Any, **kwargs: Any) -> Any:
        try:
            return await method(self, *args, **kwargs)
        except DeerFlowError as exc:
            status = status_for(exc)
            reason = _REASONS.get(status, type(exc).__name__)
            raise http_error(status, str(exc), reason, type(exc).__name__) from None

    return wrapper
