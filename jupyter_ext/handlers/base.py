"""Shared handler machinery: identity, JSON bodies and JSON errors ``{"message", "reason"}``."""

from __future__ import annotations

import errno
import functools
import json
import math
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
from deerflow_nb.errors import AdminRequiredError, DeerFlowError, UsageError, status_for
from deerflow_nb.runtime.gateway import json_type, validation_message
from deerflow_nb.tracing.context import TRACE_ID_HEADER, bind_trace_id, new_trace_id, validate_trace_id
from jupyter_ext.service import DeerFlowService

__all__ = ["API", "AUTH_RESOURCE", "MAX_BODY_BYTES", "MAX_JSON_DEPTH", "MAX_METADATA_BYTES", "DeerFlowHandler",
           "NotFoundHandler", "api_method", "check_json", "dumps", "iso"]

#: Largest JSON request body (413 beyond it).
MAX_BODY_BYTES = 1 << 20
#: Largest ``metadata`` object of a thread or run, as compact JSON (413 beyond it).
MAX_METADATA_BYTES = 64 << 10
#: Deepest nesting of a JSON body (422 beyond it).
MAX_JSON_DEPTH = 32
_INT64 = (-(1 << 63), (1 << 63) - 1)

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


def _surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_json(value: Any, where: str = "body", depth: int = 0) -> str | None:
    """Why ``value`` (parsed JSON) cannot be stored and served back, naming the field; ``None`` when it can.

    Refused: nesting deeper than :data:`MAX_JSON_DEPTH`, integers outside 64 bits, non-finite
    numbers and strings (keys too) with lone UTF-16 surrogates.
    """
    if depth > MAX_JSON_DEPTH:
        return f"{where}: nested deeper than {MAX_JSON_DEPTH} levels"
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return None if _INT64[0] <= value <= _INT64[1] else f"{where}: integer out of the 64-bit range"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where}: not a finite number"
    if isinstance(value, str):
        return f"{where}: lone UTF-16 surrogate in a string" if _surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if _surrogate(key):
                return f"{where}: lone UTF-16 surrogate in a key"
            problem = check_json(item, f"{where}.{key}", depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, list):
        for i, item in enumerate(value):
            problem = check_json(item, f"{where}[{i}]", depth + 1)
            if problem:
                return problem
    return None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class DeerFlowHandler(ExtensionHandlerMixin, APIHandler):
    """Base of every DeerFlow route (Jupyter auth, the requesting user, the runtime)."""

    auth_resource = AUTH_RESOURCE
    #: This request's trace id: its valid ``X-Trace-Id``, else a new one; echoed on every response.
    trace_id: str | None = None

    async def prepare(self) -> None:  # type: ignore[override]
        """Echo the request's trace id and bind it (runs started here carry it); 422 for an invalid one.

        Authentication comes first: an unauthenticated request is refused as such.
        """
        raw = self.request.headers.get(TRACE_ID_HEADER)
        problem = None
        try:
            self.trace_id = new_trace_id() if raw is None else validate_trace_id(raw)
        except UsageError as exc:
            self.trace_id, problem = new_trace_id(), str(exc)
        self.set_header(TRACE_ID_HEADER, self.trace_id)
        await super().prepare()
        if problem is not None:
            raise _HTTPError(422, problem, "Unprocessable Entity", "UsageError")
        bind_trace_id(self.trace_id)  # this request's task only (tornado runs each request in its own)

    def set_default_headers(self) -> None:
        """Keep the ``X-Trace-Id`` on error responses too (tornado clears headers before an error)."""
        super().set_default_headers()
        if self.trace_id is not None:
            self.set_header(TRACE_ID_HEADER, self.trace_id)

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

    @property
    def is_admin(self) -> bool:
        """Whether the requester may change what every user of this server shares.

        A plain Jupyter token or password server has one user, who owns it: yes. Under
        JupyterHub, the Hub's ``admin`` flag of the user; another identity provider's
        user needs a true ``admin`` attribute.
        """
        user = self.current_user
        if type(self.identity_provider) in {IdentityProvider, PasswordIdentityProvider} or user is None:
            return True
        hub_user = getattr(user, "hub_user", None)
        if isinstance(hub_user, dict):
            return hub_user.get("admin") is True
        return getattr(user, "admin", False) is True

    def require_admin(self, action: str) -> None:
        """Refuse (403, :class:`~deerflow_nb.errors.AdminRequiredError`) unless :attr:`is_admin`."""
        if not self.is_admin:
            name = getattr(self.current_user, "username", "?")
            raise AdminRequiredError(f"{action} changes the server for every user: only an admin may do it, and "
                                     f"{name!r} is not a JupyterHub admin (nothing was changed)")

    def parse(self, model: type[M]) -> M:
        """The JSON body as ``model``, validated strictly (no ``"yes"`` for a boolean, no ``"5"`` for a number).

        400 for a body that is not JSON (or not an object), 413 over :data:`MAX_BODY_BYTES` or a
        ``metadata`` over :data:`MAX_METADATA_BYTES`, 422 naming the offending field for JSON that
        cannot be stored and served back (:func:`check_json`) or that does not fit ``model``.
        """
        raw = self.request.body or b"{}"
        if len(raw) > MAX_BODY_BYTES:
            raise _HTTPError(413, f"request body is larger than {MAX_BODY_BYTES} bytes", "Payload Too Large")
        try:
            data = json.loads(raw, parse_constant=_no_constant)  # an empty body is {}; whitespace alone is not JSON
        except RecursionError:
            raise _HTTPError(422, f"body: nested deeper than {MAX_JSON_DEPTH} levels", "Unprocessable Entity") from None
        except ValueError:
            raise web.HTTPError(400, reason="request body is not valid JSON") from None
        if not isinstance(data, dict):  # ``null`` too: no client sends it for "no body"
            raise _HTTPError(400, f"body: must be an object, got {json_type(data)}", "Bad Request")
        problem = check_json(data)
        if problem:
            raise _HTTPError(422, problem, "Unprocessable Entity")
        metadata = data.get("metadata")
        if isinstance(metadata, dict) and len(dumps(metadata)) > MAX_METADATA_BYTES:
            raise _HTTPError(413, f"metadata: larger than {MAX_METADATA_BYTES} bytes", "Payload Too Large")
        try:
            return model.model_validate(data, strict=True)
        except ValidationError as exc:
            raise _HTTPError(422, validation_message(exc), "Unprocessable Entity") from None

    def query_int(self, name: str, default: int, *, ge: int = 0, le: int = 10_000) -> int:
        """An integer query argument within ``[ge, le]`` (422 naming it otherwise; empty: ``default``)."""
        raw = self.get_query_argument(name, None, strip=False)  # stripped, a control character would read as empty
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise _HTTPError(422, f"query {name}: not an integer: {raw[:40]!r}", "Unprocessable Entity") from None
        if not ge <= value <= le:
            raise _HTTPError(422, f"query {name}: must be between {ge} and {le}", "Unprocessable Entity")
        return value

    def query_choice(self, name: str, default: str | None, choices: tuple[str, ...]) -> str | None:
        """A query argument from ``choices`` (422 naming it otherwise; empty: ``default``)."""
        raw = self.get_query_argument(name, None, strip=False)
        if raw is None or raw == "":
            return default
        if raw not in choices:
            raise _HTTPError(422, f"query {name}: must be one of {', '.join(choices)}", "Unprocessable Entity")
        return raw

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


class NotFoundHandler(DeerFlowHandler):
    """Any other path under the API: a JSON 404 (Jupyter's catch-all would answer an HTML page)."""

    async def prepare(self) -> None:  # type: ignore[override]
        """Refuse every method."""
        await super().prepare()
        raise _HTTPError(404, f"no route {self.request.path!r}", "Not Found")


_REASONS = {404: "Not Found", 403: "Forbidden", 409: "Conflict", 413: "Payload Too Large",
            422: "Unprocessable Entity"}


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
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise http_error(422, "file name too long", "Unprocessable Entity", "UsageError") from None
            raise

    return wrapper
